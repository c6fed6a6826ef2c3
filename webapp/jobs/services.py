"""Writes of the jobs app: create (queued, sent on commit), claim, progress, finish, cancel, and the
reaper's pass (re-send owed and stale sends, expire lost and overdue jobs, remove old rows).

The one code path for background work: a job is created queued and `jobs.run` is sent with its id
after the commit; a broker that is down marks the send owed and the reaper sends it at its next
pass. A worker claims the job (queued -> running, one more attempt), reports progress (which is
also its heartbeat), and finishes it done or failed; every write of the worker is fenced by the
attempt it claimed. Every transition is a conditional UPDATE: any number of web processes,
workers and reapers may act on the same job at once. Handlers must be idempotent: a job whose
worker was lost runs again.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from webapp.accounts.models import Team
from webapp.errors import DomainError
from webapp.queues import JOBS_RUN

from . import conf
from .models import FINISHED_STATES, UNFINISHED_STATES, Job, JobState
from .registry import JobType, UnknownJobKind, job_types
from .sending import backed_off, send_now, send_on_commit

logger = logging.getLogger(__name__)


def job_error(message: str, *, code: str = "failed", **extra: Any) -> dict[str, Any]:
    """A job's error JSON: a message a user can act on, a code, and whatever the kind adds."""
    return {"message": message, "code": code, **extra}


def _type_of(kind: str) -> JobType:
    """The registered type of `kind`; a kind no longer registered gets the defaults."""
    try:
        return job_types.get(kind)
    except UnknownJobKind:
        fallback = JobType()
        fallback.kind = kind
        return fallback


def _expiry(job_type: JobType, now: datetime) -> datetime:
    return now + timedelta(seconds=float(job_type.value("keep_seconds")))


# --- create and send -----------------------------------------------------------------------


def job_create(
    *,
    kind: str,
    team: Team,
    owner: AbstractBaseUser | AnonymousUser | None = None,
    subject_id: int | None = None,
    params: dict[str, Any] | None = None,
) -> Job:
    """Create a queued job of a registered kind and send `jobs.run` for it after the commit.

    A broker that is down does not fail the caller: the send is marked owed and the reaper sends
    it (jobs_resend). Raises DomainError("unknown_job_kind") for a kind nobody registered.
    """
    try:
        job_type = job_types.get(kind)
    except UnknownJobKind:
        raise DomainError("unknown_job_kind", f"No job kind {kind!r}.") from None
    now = timezone.now()
    job = Job.objects.create(
        kind=kind,
        team=team,
        owner=owner if owner is not None and owner.is_authenticated else None,
        subject_id=subject_id,
        params=params or {},
        max_attempts=int(job_type.value("max_attempts")),
        created_at=now,
        sent_at=now,
    )
    _send_on_commit(job.pk, job_type)
    return job


def _owe(job_id: int, error: str) -> None:
    """The broker refused the send: the reaper sends it again at its next pass."""
    if Job.objects.filter(pk=job_id, state=JobState.QUEUED).update(send_owed=True):
        logger.warning("job %s: send owed (the broker is unreachable): %s", job_id, error)


def _send_on_commit(job_id: int, job_type: JobType) -> None:
    send_on_commit(JOBS_RUN, [job_id], queue=job_type.queue, owed=lambda error: _owe(job_id, error))


def _send(job_id: int, job_type: JobType) -> bool:
    """Send `jobs.run` now; False (and owed) when the broker refused it."""
    error = send_now(JOBS_RUN, [job_id], queue=job_type.queue)
    if error:
        _owe(job_id, error)
        return False
    return True


# --- the worker's side ---------------------------------------------------------------------


def job_claim(*, job_id: int, now: datetime | None = None) -> Job | None:
    """Take a queued job for this worker: running, one more attempt; None when it is not queued
    (a duplicate delivery, a job another worker runs, a finished or cancelled one)."""
    now = now or timezone.now()
    claimed = Job.objects.filter(pk=job_id, state=JobState.QUEUED).update(
        state=JobState.RUNNING,
        attempts=F("attempts") + 1,
        started_at=now,
        beat_at=now,
        send_owed=False,
        progress=None,
    )
    return Job.objects.filter(pk=job_id).first() if claimed else None


def job_claim_fairest(*, kind: str, now: datetime | None = None) -> Job | None:
    """Take the fairest queued job of `kind`: the team whose last job of the kind started least
    recently (never first), then the oldest job; None when none is queued.

    A busy team's ten uploads then never hold another team's one: each message a worker takes
    runs whoever's turn it is (the kind's type says `fair`; messages stay one per queued job, as
    for training's tokens, docs/decisions/0013).
    """
    from django.db.models import OuterRef, Subquery

    last_start = Subquery(
        Job.objects.filter(kind=kind, team=OuterRef("team"), started_at__isnull=False)
        .order_by("-started_at").values("started_at")[:1]
    )
    queued = (Job.objects.filter(kind=kind, state=JobState.QUEUED).annotate(team_last=last_start)
              .order_by(F("team_last").asc(nulls_first=True), "created_at", "pk"))
    for job_id in list(queued.values_list("pk", flat=True)[:8]):
        claimed = job_claim(job_id=job_id, now=now)
        if claimed is not None:
            return claimed
    return None


def _held(job_id: int, attempt: int) -> Any:
    return Job.objects.filter(pk=job_id, state=JobState.RUNNING, attempts=attempt)


def job_beat(*, job_id: int, attempt: int, progress: float | None = None) -> bool:
    """The worker is alive (and, given, the fraction done); False when the job is no longer its
    own (the reaper took it for lost, or it was cancelled)."""
    fields: dict[str, Any] = {"beat_at": timezone.now()}
    if progress is not None:
        fields["progress"] = round(min(max(float(progress), 0.0), 1.0), 3)
    return bool(_held(job_id, attempt).update(**fields))


def job_finish(
    *,
    job_id: int,
    attempt: int,
    result: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
) -> bool:
    """Record the outcome of the attempt `attempt`: done with `result`, or failed with `error`
    (its type's on_done or on_failed hook runs in the same transaction). False, and nothing
    written, when the job is no longer this attempt's."""
    now = timezone.now()
    job = Job.objects.filter(pk=job_id).only("kind").first()
    if job is None:
        return False
    job_type = _type_of(job.kind)
    fields: dict[str, Any] = {"finished_at": now, "expires_at": _expiry(job_type, now)}
    if error is None:
        fields.update(state=JobState.DONE, result=result, error=None)
        if job_type.reports_progress:
            fields["progress"] = 1.0
    else:
        fields.update(state=JobState.FAILED, result=result, error=error)
    with transaction.atomic():
        if not _held(job_id, attempt).update(**fields):
            return False
        if error is not None:
            job_type.on_failed(Job.objects.get(pk=job_id))
        else:
            job_type.on_done(Job.objects.get(pk=job_id))
    return True


# --- cancel --------------------------------------------------------------------------------


def jobs_cancel(*, kind: str, subject_id: int) -> int:
    """Cancel the unfinished jobs of `kind` about `subject_id` (their subject is gone); how many.

    A running handler is not interrupted: its writes to the job are refused from now on.
    """
    now = timezone.now()
    expires = _expiry(_type_of(kind), now)
    return Job.objects.filter(kind=kind, subject_id=subject_id, state__in=UNFINISHED_STATES).update(
        state=JobState.CANCELLED, finished_at=now, expires_at=expires, send_owed=False
    )


# --- the reaper's pass ---------------------------------------------------------------------


def jobs_reap(*, now: datetime | None = None) -> dict[str, Any]:
    """One reaper pass over the jobs: expire (jobs_expire), re-send (jobs_resend), and at most
    once per JOBS_CLEANUP_SECONDS per process remove old rows (jobs_cleanup). Every worker's
    reaper calls this (webapp/runs/scheduling/reaper.py::run_reap); safe from many at once."""
    now = now or timezone.now()
    expired = jobs_expire(now=now)
    resent = jobs_resend(now=now)
    removed = 0
    moment = now.timestamp()
    if abs(moment - _last_cleanup[0]) >= float(conf.get("JOBS_CLEANUP_SECONDS")):
        _last_cleanup[0] = moment
        removed = jobs_cleanup(now=now)
    return {**expired, "resent": resent, "removed": removed}


_last_cleanup = [0.0]


def jobs_resend(*, now: datetime | None = None) -> list[int]:
    """Send `jobs.run` again for queued jobs whose send is owed or looks lost; their ids (sent).

    Owed ones (the broker refused the last send) are tried at every pass until the broker takes
    them. A job still queued its kind's resend_seconds after its send (the message was lost with
    a Redis restart, or waits behind others) is sent again with the doubling back-off
    (sending.backed_off). Only the pass whose conditional UPDATE wins sends; a refused send
    leaves the job owed, so the next pass tries again. A duplicate is harmless: the delivery
    that cannot claim the job returns at once.
    """
    now = now or timezone.now()
    queued = Job.objects.filter(state=JobState.QUEUED)
    resent: list[int] = []
    for job_id, kind in list(queued.filter(send_owed=True).values_list("pk", "kind")):
        if kind not in job_types:
            continue  # nobody here can run it; a process that knows the kind will send it
        if queued.filter(pk=job_id, send_owed=True).update(send_owed=False, sent_at=now):
            if _send(job_id, job_types.get(kind)):
                resent.append(job_id)
    for job_type in job_types:
        interval = float(job_type.value("resend_seconds"))
        cutoff = now - timedelta(seconds=interval)
        stale = queued.filter(kind=job_type.kind, send_owed=False).filter(
            Q(sent_at__lt=cutoff) | Q(sent_at__isnull=True, created_at__lt=cutoff)
        )
        for job_id, sent_at, created_at in list(stale.values_list("pk", "sent_at", "created_at")):
            if backed_off(now=now, last=sent_at or created_at, origin=created_at, interval=interval):
                continue
            if not queued.filter(pk=job_id, sent_at=sent_at, send_owed=False).update(sent_at=now):
                continue  # another reaper sent it, or a worker took it
            if _send(job_id, job_type):
                resent.append(job_id)
                job = Job.objects.filter(pk=job_id).first()
                if job is not None:
                    job_type.on_resent(job, (now - (sent_at or created_at)).total_seconds())
    if resent:
        logger.warning("re-sent jobs.run for jobs owed or queued too long: %s", resent)
    return resent


def jobs_expire(*, now: datetime | None = None) -> dict[str, list[int]]:
    """Jobs whose worker was lost (running, no sign of life for their lease) go back to the queue
    while attempts remain, else fail; queued jobs past their kind's queued_expire_seconds fail.
    Returns {"requeued": ids, "failed": ids}."""
    now = now or timezone.now()
    requeued: list[int] = []
    failed: list[int] = []
    for job_type in job_types:
        cutoff = now - timedelta(seconds=float(job_type.value("lease_seconds")))
        running = Job.objects.filter(kind=job_type.kind, state=JobState.RUNNING, beat_at__lt=cutoff)
        for job_id, attempts, max_attempts in list(running.values_list("pk", "attempts", "max_attempts")):
            lost = running.filter(pk=job_id, attempts=attempts)
            with transaction.atomic():
                if attempts < max_attempts:
                    if lost.update(state=JobState.QUEUED, sent_at=now, send_owed=False, beat_at=None):
                        requeued.append(job_id)
                        _send_on_commit(job_id, job_type)
                    continue
                error = job_error(
                    f"The worker running it was lost {attempts} times; giving up.", code="worker_lost"
                )
                if _fail(lost, job_id, job_type, error, now):
                    failed.append(job_id)
        expire_s = job_type.value("queued_expire_seconds")
        if expire_s is None:
            continue
        overdue = Job.objects.filter(
            kind=job_type.kind, state=JobState.QUEUED,
            created_at__lt=now - timedelta(seconds=float(expire_s)),
        )  # fmt: skip
        for job_id in list(overdue.values_list("pk", flat=True)):
            error = job_error(f"No worker took it within {float(expire_s):g} s.", code="expired")
            with transaction.atomic():
                if _fail(overdue.filter(pk=job_id), job_id, job_type, error, now):
                    failed.append(job_id)
    if requeued:
        logger.warning("jobs whose worker was lost, queued again: %s", requeued)
    if failed:
        logger.warning("jobs failed by the reaper (worker lost too often, or waited too long): %s", failed)
    return {"requeued": requeued, "failed": failed}


def _fail(rows: Any, job_id: int, job_type: JobType, error: dict[str, Any], now: datetime) -> bool:
    """Fail the job if `rows` (a conditional filter) still holds it; its hook runs (in the caller's
    transaction)."""
    if not rows.update(
        state=JobState.FAILED, error=error, finished_at=now, expires_at=_expiry(job_type, now), send_owed=False
    ):
        return False
    job_type.on_failed(Job.objects.get(pk=job_id))
    return True


def jobs_cleanup(*, now: datetime | None = None) -> int:
    """Remove finished jobs past their keep time (`expires_at`); how many."""
    now = now or timezone.now()
    removed, _ = Job.objects.filter(state__in=FINISHED_STATES, expires_at__lt=now).delete()
    if removed:
        logger.info("removed %s finished jobs past their keep time", removed)
    return removed
