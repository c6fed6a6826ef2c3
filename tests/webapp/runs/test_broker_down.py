"""With the broker down, a committed write answers 2xx with its row, and the reaper sends its task later.

"Down" is real: the Celery app points at a Redis port nobody listens on, so every send fails the
way it does when Redis is stopped. "Back" is the in-memory broker, whose queues the tests read.
"""

from __future__ import annotations

import socket
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from webapp.jobs.models import Job
from webapp.queues import TRAIN_QUEUES
from webapp.runs.models import Explanation, ExplanationStatus, ExportStatus, Run, RunStatus
from webapp.runs.stream.events import events_since, flatten

pytestmark = pytest.mark.django_db(transaction=True)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def broker() -> Any:
    """Switch the Celery app between a broker that is down and one that is up (in memory)."""
    from webapp.celery import app

    class Broker:
        def down(self) -> None:
            self._switch(f"redis://127.0.0.1:{_closed_port()}/0")

        def up(self) -> None:
            self._switch("memory://")
            for queue in (*TRAIN_QUEUES, "short"):  # what earlier tests of this process left there
                self.take(queue)

        def _switch(self, url: str) -> None:
            app.conf.broker_url = url
            app._after_fork()  # Celery's own reset of its connection and producer pools

        def take(self, queue: str) -> list[tuple[str, Any]]:
            """Every message on `queue`: (task name, args or kwargs)."""
            taken = []
            with app.connection_for_read() as conn:
                while (message := conn.default_channel.basic_get(queue, no_ack=True)) is not None:
                    args, kwargs, _ = message.decode()
                    taken.append((message.headers["task"], args or kwargs))
            return taken

    broker = Broker()
    broker.down()
    yield broker
    broker.up()


def test_a_run_created_while_the_broker_is_down_is_201_and_trained_once_it_is_back(
    api_a: Any, run_body: dict[str, Any], broker: Any
) -> None:
    from webapp.runs.scheduling.reaper import run_reap

    answer = api_a.post("/api/runs/", run_body, format="json")
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["status"] == "queued" and Run.objects.count() == 1, "one run, no 500 for a retry to duplicate"
    logs = [e for e in flatten(events_since(run_id=body["id"])) if e["type"] == "log"]
    assert len(logs) == 1 and "asked for again" in logs[0]["message"]

    run_reap()  # still down: the send stays owed, no second warning
    assert Run.objects.get(pk=body["id"]).queued_send_owed
    broker.up()
    run_reap()
    # A token on the queue of what the run needs (config device "auto": any worker; one process).
    assert broker.take("train.any.1") == [("runs.train", [body["id"]])]
    assert not Run.objects.get(pk=body["id"]).queued_send_owed
    run_reap()
    assert broker.take("train.any.1") == [], "sent once; later passes only re-send a run queued too long"
    assert len([e for e in flatten(events_since(run_id=body["id"])) if e["type"] == "log"]) == 1


def test_an_explanation_asked_for_while_the_broker_is_down_is_201_and_sent_once_it_is_back(
    api_a: Any, run_a: Any, broker: Any
) -> None:
    from webapp.runs.scheduling.reaper import run_reap

    Run.objects.filter(pk=run_a.pk).update(status=RunStatus.SUCCEEDED)
    answer = api_a.post(f"/api/runs/{run_a.pk}/explanations/", {"index": 0, "method": "saliency"}, format="json")
    assert answer.status_code in (201, 202), answer.content
    explanation = Explanation.objects.get()
    job = Job.objects.get(kind="runs.explain", subject_id=explanation.pk)
    assert explanation.status == ExplanationStatus.QUEUED and job.send_owed  # owed
    broker.up()
    run_reap()
    assert broker.take("short") == [("jobs.run", [job.pk])]
    run_reap()
    assert broker.take("short") == []


def test_an_export_whose_send_failed_or_whose_worker_was_lost_is_sent_again(run_a: Any, broker: Any) -> None:
    from webapp.jobs.services import jobs_resend
    from webapp.runs.inference.exports import run_export_request
    from webapp.runs.selectors import run_exports
    from workers.jobs import job_execute

    Run.objects.filter(pk=run_a.pk).update(status=RunStatus.SUCCEEDED)
    assert run_export_request(run=run_a)  # the broker is down: pending, owed, no error
    run = Run.objects.get(pk=run_a.pk)
    job = Job.objects.get(kind="runs.export", subject_id=run.pk)
    assert run_exports(run)["status"] == ExportStatus.PENDING and job.send_owed
    broker.up()
    now = timezone.now()
    assert jobs_resend(now=now) == [job.pk]
    assert broker.take("short") == [("jobs.run", [job.pk])]
    assert jobs_resend(now=now + timedelta(seconds=60)) == []
    # Its worker was killed: still pending after the deadline, so it is sent again, with a log line.
    assert jobs_resend(now=now + timedelta(seconds=121)) == [job.pk]
    assert broker.take("short") == [("jobs.run", [job.pk])]
    logs = [e for e in flatten(events_since(run_id=run_a.pk)) if e["type"] == "log"]
    assert logs and "still pending 121 s" in logs[-1]["message"]
    # A re-send of an export that did finish returns at once.
    Job.objects.filter(pk=job.pk).update(state="done")
    assert run_exports(run)["status"] == ExportStatus.READY
    assert job_execute(job.pk) == "not queued"
    assert jobs_resend(now=now + timedelta(seconds=3600)) == []
