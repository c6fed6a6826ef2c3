"""The job abstraction: registry, the one task that runs every kind, claims fenced by attempt,
the reaper's expiry of lost and overdue jobs, and the removal of old rows."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.webapp.jobs.conftest import ECHO
from webapp.errors import DomainError
from webapp.jobs.models import Job, JobState
from webapp.jobs.registry import JobType, JobTypeRegistry, UnknownJobKind, job_types

pytestmark = pytest.mark.django_db


def _queued(team: Any, user: Any = None, subject: int = 7, **params: Any) -> Job:
    from webapp.jobs.services import job_create

    return job_create(kind=ECHO, team=team, owner=user, subject_id=subject, params=params)


# --- the registry ----------------------------------------------------------------------------


def test_kinds_are_registered_once_and_an_unknown_kind_is_refused(team_a: Any, echo_kind: Any) -> None:
    from webapp.jobs.services import job_create

    assert "datasets.process" in job_types.kinds(), "the datasets app registers its kind at start"
    assert job_types.get(ECHO) is echo_kind
    registry = JobTypeRegistry()
    registry.register(echo_kind)
    registry.register(type(echo_kind)())  # the same type again (a module imported twice): fine

    class Other(JobType):
        kind = ECHO

    with pytest.raises(ValueError, match="already"):
        registry.register(Other())
    with pytest.raises(UnknownJobKind):
        registry.get("nobody.registered")
    with pytest.raises(DomainError) as refused:
        job_create(kind="nobody.registered", team=team_a)
    assert refused.value.code == "unknown_job_kind" and not Job.objects.exists()


def test_a_kind_takes_the_settings_unless_it_or_jobs_kinds_says_otherwise(settings: Any, echo_kind: Any) -> None:
    settings.JOBS_LEASE_SECONDS = 30.0
    assert echo_kind.value("lease_seconds") == 30.0
    assert echo_kind.value("queue") == "short"
    echo_kind.lease_seconds = 12.0
    assert echo_kind.value("lease_seconds") == 12.0
    settings.JOBS_KINDS = {ECHO: {"lease_seconds": 5.0}}
    assert echo_kind.value("lease_seconds") == 5.0
    # The datasets kind reads its own setting at each use.
    settings.NETLOOM_DATASET_RESEND_SECONDS = 7.0
    assert job_types.get("datasets.process").value("resend_seconds") == 7.0


# --- one task runs every kind ----------------------------------------------------------------


def test_a_queued_job_is_run_by_the_task_and_done_with_its_result(team_a: Any, user_a: Any, echo_kind: Any) -> None:
    from workers.jobs import run_job

    job = _queued(team_a, user_a, do="progress", word="hello")
    assert (job.state, job.attempts, job.max_attempts, job.owner) == (JobState.QUEUED, 0, 3, user_a)
    assert run_job(job.pk) == "done"
    job.refresh_from_db()
    assert job.state == JobState.DONE and job.result == {"echo": {"do": "progress", "word": "hello"}}
    assert job.error is None and job.attempts == 1 and job.progress == 1.0
    assert job.started_at and job.finished_at and job.expires_at
    assert job.expires_at - job.finished_at == timedelta(days=7), "kept JOBS_KEEP_SECONDS"
    assert echo_kind.calls == [job.pk]


def test_a_failing_handler_fails_the_job_with_its_error_and_the_kind_hears_of_it(team_a: Any, echo_kind: Any) -> None:
    from workers.jobs import run_job

    refused, crashed = _queued(team_a, do="fail"), _queued(team_a, do="crash")
    assert run_job(refused.pk) == "failed" and run_job(crashed.pk) == "failed"
    refused.refresh_from_db()
    crashed.refresh_from_db()
    assert refused.state == JobState.FAILED and refused.result is None
    assert refused.error == {"message": "the echo refused", "row": 3, "code": "refused"}
    assert crashed.state == JobState.FAILED and crashed.error["code"] == "internal"
    assert "RuntimeError: boom" in crashed.error["message"]
    assert refused.attempts == 1, "a failure is not retried: only a lost worker's job runs again"
    assert [pk for pk, _ in echo_kind.failed] == [refused.pk, crashed.pk]
    assert echo_kind.failed[0][1]["row"] == 3


def test_a_duplicate_delivery_returns_at_once(team_a: Any, echo_kind: Any) -> None:
    from webapp.jobs.services import job_claim
    from workers.jobs import run_job

    job = _queued(team_a)
    assert run_job(job.pk) == "done"
    assert run_job(job.pk) == "not queued", "the message delivered again after the job finished"
    assert echo_kind.calls == [job.pk]
    other = _queued(team_a)
    assert job_claim(job_id=other.pk) is not None  # a worker runs it now
    assert run_job(other.pk) == "not queued", "a second delivery while it runs"
    assert Job.objects.get(pk=other.pk).attempts == 1
    assert run_job(10**9) == "missing"


def test_a_worker_without_the_handler_leaves_the_job_queued(team_a: Any, echo_kind: Any) -> None:
    from workers.jobs import HANDLERS, run_job

    job = _queued(team_a)
    handler = HANDLERS.pop(ECHO)
    try:
        assert run_job(job.pk) == "no handler"
    finally:
        HANDLERS[ECHO] = handler
    job.refresh_from_db()
    assert job.state == JobState.QUEUED and job.attempts == 0, "a worker that has the handler takes it"


def test_the_handler_registry_refuses_a_second_handler_for_a_kind(echo_kind: Any) -> None:
    from workers.jobs import job_handler

    with pytest.raises(ValueError, match="already has a handler"):
        job_handler(ECHO)(lambda job, progress: None)


# --- the reaper: lost workers, overdue jobs, old rows -----------------------------------------


def test_a_job_whose_worker_was_lost_runs_again_while_attempts_remain_then_fails(
    team_a: Any, echo_kind: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from webapp.jobs.services import job_beat, job_claim, job_finish, jobs_expire

    job = _queued(team_a)
    t0 = job.created_at
    claimed = job_claim(job_id=job.pk, now=t0)
    assert claimed is not None and claimed.attempts == 1
    assert jobs_expire(now=t0 + timedelta(seconds=59)) == {"requeued": [], "failed": []}, "within its lease"
    with django_capture_on_commit_callbacks() as sends:
        assert jobs_expire(now=t0 + timedelta(seconds=61)) == {"requeued": [job.pk], "failed": []}
    assert len(sends) == 1, "jobs.run is sent again after the commit"
    job.refresh_from_db()
    assert job.state == JobState.QUEUED and job.attempts == 1
    # The lost worker comes back: its writes are refused, the job is the next attempt's.
    assert job_claim(job_id=job.pk, now=t0 + timedelta(seconds=62)).attempts == 2
    assert not job_beat(job_id=job.pk, attempt=1, progress=0.5)
    assert not job_finish(job_id=job.pk, attempt=1, result={"late": True})
    assert Job.objects.get(pk=job.pk).state == JobState.RUNNING
    with django_capture_on_commit_callbacks():
        assert jobs_expire(now=t0 + timedelta(seconds=200))["requeued"] == [job.pk]
    assert job_claim(job_id=job.pk, now=t0 + timedelta(seconds=201)).attempts == 3
    assert jobs_expire(now=t0 + timedelta(seconds=400)) == {"requeued": [], "failed": [job.pk]}
    job.refresh_from_db()
    assert job.state == JobState.FAILED and job.error["code"] == "worker_lost"
    assert "lost 3 times" in job.error["message"]
    assert echo_kind.failed == [(job.pk, job.error)]


def test_a_heartbeat_keeps_a_long_job_its_own(team_a: Any, echo_kind: Any) -> None:
    from webapp.jobs.services import job_beat, job_claim, jobs_expire

    job = _queued(team_a)
    claimed = job_claim(job_id=job.pk, now=job.created_at - timedelta(seconds=300))
    assert job_beat(job_id=job.pk, attempt=claimed.attempts)  # beat_at: now
    assert jobs_expire()["requeued"] == []
    assert Job.objects.get(pk=job.pk).state == JobState.RUNNING


def test_a_job_no_worker_takes_fails_once_its_kind_stops_waiting(team_a: Any, echo_kind: Any) -> None:
    from webapp.jobs.services import jobs_expire

    job = _queued(team_a)
    assert jobs_expire(now=job.created_at + timedelta(days=30))["failed"] == [], "by default it waits"
    echo_kind.queued_expire_seconds = 600.0
    assert jobs_expire(now=job.created_at + timedelta(seconds=599))["failed"] == []
    assert jobs_expire(now=job.created_at + timedelta(seconds=601))["failed"] == [job.pk]
    job.refresh_from_db()
    assert job.state == JobState.FAILED and job.error == {"message": "No worker took it within 600 s.", "code": "expired"}
    assert echo_kind.failed == [(job.pk, job.error)]


def test_finished_jobs_are_removed_after_their_keep_time_and_unfinished_ones_never(
    team_a: Any, echo_kind: Any, settings: Any
) -> None:
    from django.utils import timezone

    from webapp.jobs import services
    from webapp.jobs.services import jobs_cancel, jobs_cleanup, jobs_reap
    from workers.jobs import run_job

    done, waiting, cancelled = _queued(team_a, subject=1), _queued(team_a, subject=2), _queued(team_a, subject=3)
    assert run_job(done.pk) == "done"
    assert jobs_cancel(kind=ECHO, subject_id=3) == 1
    cancelled.refresh_from_db()
    assert cancelled.state == JobState.CANCELLED and cancelled.finished_at and cancelled.expires_at
    assert run_job(cancelled.pk) == "not queued", "a cancelled job never runs"
    finished_at = Job.objects.get(pk=done.pk).finished_at
    assert jobs_cleanup(now=finished_at + timedelta(days=6)) == 0
    assert jobs_cleanup(now=finished_at + timedelta(days=8)) == 2
    assert list(Job.objects.values_list("pk", flat=True)) == [waiting.pk]
    # The reaper's pass removes old rows at most once per JOBS_CLEANUP_SECONDS per process.
    settings.JOBS_KEEP_SECONDS = 0.0
    settings.JOBS_CLEANUP_SECONDS = 300.0
    assert run_job(waiting.pk) == "done"
    later = timezone.now() + timedelta(seconds=1)
    services._last_cleanup[0] = later.timestamp() - 10
    assert jobs_reap(now=later)["removed"] == 0, "cleaned up 10 s ago"
    assert jobs_reap(now=later + timedelta(seconds=300))["removed"] == 1


@pytest.mark.django_db(transaction=True)
def test_the_task_beats_while_a_long_handler_runs(team_a: Any, echo_kind: Any) -> None:
    """Every quarter of the lease the worker renews it, so only a lost worker lets it run out."""
    import time

    from workers.jobs import HANDLERS, run_job

    beats: list[Any] = []

    def slow(job: Any, progress: Any) -> dict[str, Any]:
        for _ in range(6):
            time.sleep(0.1)
            beats.append(Job.objects.get(pk=job.pk).beat_at)
        return {}

    echo_kind.lease_seconds = 0.2  # a beat every 0.05 s
    HANDLERS[ECHO] = slow
    job = _queued(team_a)
    assert run_job(job.pk) == "done"
    assert len(set(beats)) >= 3, f"the lease was renewed while the handler ran: {beats}"
    assert all(beat > Job.objects.get(pk=job.pk).started_at for beat in beats[1:])
