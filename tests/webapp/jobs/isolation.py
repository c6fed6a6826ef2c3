"""Team-A objects for tests/webapp/test_isolation.py's {job} placeholder."""

from __future__ import annotations

from typing import Any


def objects(*, team: Any, user: Any, dataset: Any, revision: Any) -> dict[str, Any]:
    """A finished processing job of team A's dataset (nothing is queued anywhere)."""
    from webapp.jobs.models import Job, JobState

    job = Job.objects.create(
        kind="datasets.process", team=team, owner=user, subject_id=dataset.pk, state=JobState.DONE,
        result={"dataset": dataset.pk, "status": "ready"},
    )  # fmt: skip
    return {"job": job.pk}
