"""A fair kind's message runs whoever's turn it is: the team whose last job of the kind started
least recently, then the oldest job. Dataset processing is such a kind, so one team's ten uploads
never hold another team's one."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.jobs.models import Job, JobState
from webapp.jobs.services import job_create
from workers.jobs import job_execute

pytestmark = pytest.mark.django_db


def test_each_message_runs_the_job_whose_turn_it_is(echo_kind: Any, team_a: Any, team_b: Any) -> None:
    echo_kind.fair = True
    first_a = [job_create(kind=echo_kind.kind, team=team_a, params={"n": i}) for i in range(3)]
    only_b = job_create(kind=echo_kind.kind, team=team_b, params={"n": 9})
    # Three messages of team A arrive first; team B's job is the newest.
    assert job_execute(first_a[0].pk) == "done"  # nobody has started one: the oldest, A's first
    assert job_execute(first_a[1].pk) == "done"  # B never started one: B goes next, whatever was named
    assert echo_kind.calls == [first_a[0].pk, only_b.pk]
    assert job_execute(first_a[2].pk) == "done"
    assert job_execute(only_b.pk) == "done"  # the last message runs what is left
    assert echo_kind.calls == [first_a[0].pk, only_b.pk, first_a[1].pk, first_a[2].pk]
    assert job_execute(only_b.pk) == "not queued"  # a duplicate finds nothing to run
    assert set(Job.objects.values_list("state", flat=True)) == {JobState.DONE}


def test_dataset_processing_is_a_fair_kind() -> None:
    from webapp.jobs.registry import job_types
    from webapp.queues import DATASETS_PROCESS

    assert job_types.get(DATASETS_PROCESS).fair
