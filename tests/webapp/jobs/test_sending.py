"""Sending jobs through a real broker: sent after the commit, owed while Redis is stopped and sent
by the reaper once it is back, re-sent with the doubling back-off while nobody claims them.

"Down" is real: the test's own redis-server is stopped, so every send is refused the way it is in
production; "up" starts it again on the same port, and the tests read its queues.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.webapp.jobs.conftest import ECHO
from webapp.jobs.models import Job, JobState

pytestmark = pytest.mark.django_db(transaction=True)


def _create(team: Any) -> Job:
    from webapp.jobs.services import job_create

    return job_create(kind=ECHO, team=team, subject_id=1)


def test_a_job_is_sent_after_the_commit_to_its_kinds_queue(team_a: Any, echo_kind: Any, broker: Any) -> None:
    from django.db import transaction

    with transaction.atomic():
        job = _create(team_a)
        assert broker.take() == [], "nothing is sent before the commit"
    assert broker.take() == [("jobs.run", [job.pk])]
    job.refresh_from_db()
    assert job.state == JobState.QUEUED and not job.send_owed and job.sent_at is not None


def test_a_job_created_while_the_broker_is_down_is_owed_and_sent_once_it_is_back(
    team_a: Any, echo_kind: Any, broker: Any
) -> None:
    from webapp.jobs.services import jobs_reap, jobs_resend
    from workers.jobs import run_job

    broker.down()
    job = _create(team_a)  # no error: the row is committed, the send owed
    assert Job.objects.get(pk=job.pk).send_owed
    assert jobs_resend() == [], "still down: tried, not sent"
    assert Job.objects.get(pk=job.pk).send_owed, "still owed for the next pass"
    broker.up()
    assert jobs_reap()["resent"] == [job.pk], "owed: sent at the first pass the broker takes it"
    assert broker.take() == [("jobs.run", [job.pk])]
    assert not Job.objects.get(pk=job.pk).send_owed
    assert jobs_resend() == [] and broker.take() == [], "sent once"
    assert run_job(job.pk) == "done"
    assert jobs_resend(now=timezone.now() + timedelta(hours=2)) == [], "a finished job is never sent again"


def test_a_queued_job_nobody_claims_is_sent_again_backing_off(team_a: Any, echo_kind: Any, broker: Any) -> None:
    from webapp.jobs.services import jobs_resend

    job = _create(team_a)
    broker.take()
    t0 = Job.objects.get(pk=job.pk).sent_at
    assert jobs_resend(now=t0 + timedelta(seconds=59)) == []
    assert jobs_resend(now=t0 + timedelta(seconds=61)) == [job.pk]
    assert broker.take() == [("jobs.run", [job.pk])]
    # Waiting as long again as at the last send (61 s): not before t0 + 122 s.
    assert jobs_resend(now=t0 + timedelta(seconds=121)) == []
    assert jobs_resend(now=t0 + timedelta(seconds=122)) == [job.pk]
    sends = [s for s in range(123, 7200, 10) if jobs_resend(now=t0 + timedelta(seconds=s))]
    assert sends == [253, 513, 1033, 2073, 4153], "each wait doubles: a long queue costs a few duplicates"
    assert len(broker.take()) == 1 + len(sends)


def test_a_resend_refused_by_the_broker_is_owed_and_tried_at_every_pass(
    team_a: Any, echo_kind: Any, broker: Any
) -> None:
    from webapp.jobs.services import jobs_resend

    job = _create(team_a)
    broker.take()
    t0 = Job.objects.get(pk=job.pk).sent_at
    broker.down()
    assert jobs_resend(now=t0 + timedelta(seconds=61)) == []
    assert Job.objects.get(pk=job.pk).send_owed
    broker.up()
    assert jobs_resend(now=t0 + timedelta(seconds=62)) == [job.pk], "owed: no back-off"
    assert broker.take() == [("jobs.run", [job.pk])]


def test_the_generic_primitives_send_any_task_and_call_owed_when_refused(broker: Any) -> None:
    from webapp.jobs.sending import backed_off, send_on_commit

    owed: list[str] = []
    send_on_commit("runs.explain", [5], queue=lambda: "short", owed=owed.append)
    assert broker.take() == [("runs.explain", [5])] and owed == []
    broker.down()
    send_on_commit("runs.explain", [6], owed=owed.append)
    assert len(owed) == 1 and "Error" in owed[0]
    now = timezone.now()
    assert backed_off(now=now, last=now - timedelta(seconds=30), origin=now - timedelta(seconds=30), interval=60)
    assert not backed_off(now=now, last=now - timedelta(seconds=60), origin=now - timedelta(seconds=60), interval=60)
    assert backed_off(now=now, last=now - timedelta(seconds=100), origin=now - timedelta(seconds=300), interval=60)


def test_every_pass_of_the_runs_reaper_sends_owed_jobs(team_a: Any, echo_kind: Any, broker: Any) -> None:
    from webapp.runs.scheduling.reaper import run_reap

    broker.down()
    job = _create(team_a)
    broker.up()
    run_reap()
    assert broker.take() == [("jobs.run", [job.pk])]
    run_reap()
    assert broker.take() == []
