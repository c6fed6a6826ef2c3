"""Leases of the runs the workers train: take, claim the fairest fitting run, renew, read.

The conditional UPDATE of a run's lease token is the fence that keeps two deliveries of one
message from both training it.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from .. import conf
from ..models import Run, RunStatus, Worker
from ..stream.events import event_emit
from .devices import WorkerDevices, device_label
from .queue import runs_claimable
from .sends import _queue_train

_LEASABLE = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED)


def run_lease_take(
    *, run_id: int, worker: str, device: str = "", statuses: tuple[str, ...] = _LEASABLE
) -> str | None:
    """Take the run's lease for this delivery; None when another worker holds it or it is done.

    The conditional UPDATE is the fence: two deliveries of the same message (the broker's
    visibility timeout, a requeue by the reaper) can never both train the run. `device` is
    what it trains on there ("cpu", "cuda:0,cuda:1"); the worker's row names the run.
    """
    now = timezone.now()
    token = uuid.uuid4().hex
    lease = timedelta(seconds=float(conf.get("RUNS_LEASE_SECONDS")))
    with transaction.atomic():
        taken = (
            Run.objects.filter(pk=run_id, status__in=list(statuses), cancel_requested=False)
            .filter(Q(lease_token__isnull=True) | Q(lease_expires_at__lt=now))
            .update(
                lease_token=token,
                worker=worker[:200],
                device=device[:200],
                status=RunStatus.RUNNING,
                attempts=F("attempts") + 1,
                started_at=Coalesce("started_at", now),
                error="",
                drain_requested=False,
            )
        )
        if not taken:
            return None
        # The lease runs from when the row was taken: the UPDATE above may have waited for its
        # lock after `now` was read (another transaction's row lock on PostgreSQL; SQLite's write
        # lock, up to its 20 s timeout), and a lease counted from `now` could have run out as this
        # commits, before the recorder's first heartbeat renews it.
        taken_at = timezone.now()
        Run.objects.filter(pk=run_id, lease_token=token).update(lease_expires_at=taken_at + lease,
                                                                heartbeat_at=taken_at)
        Worker.objects.filter(hostname=worker[:200]).update(current_run_id=run_id, last_seen=now)
        attempts, max_attempts = Run.objects.filter(pk=run_id).values_list("attempts", "max_attempts").get()
        where = f"{worker} ({device})" if device else worker
        detail = f"training on {where}" + (f" (attempt {attempts} of {max_attempts})" if attempts > 1 else "")
        event_emit(run_id=run_id, event={"type": "status", "status": RunStatus.RUNNING, "detail": detail})
    return token


def run_claim(*, worker: str, devices: WorkerDevices) -> tuple[int, str] | None:
    """Take the lease of the fairest queued run this worker fits: (run id, lease token), or None.

    What a runs.train token does when a worker takes it. One transaction per try: the row is
    locked (SELECT ... FOR UPDATE SKIP LOCKED on PostgreSQL, so two workers never wait on or
    take the same run; SQLite serialises writers), and a team with a concurrency limit is
    locked and counted again, so two workers cannot both start its last allowed run.
    """
    from webapp.accounts.models import Team

    skipped: set[int] = set()
    for _ in range(8):
        with transaction.atomic():
            candidates = runs_claimable(kind=devices.kind, capacity=devices.capacity).exclude(pk__in=skipped)
            if connection.features.has_select_for_update_skip_locked:
                candidates = candidates.select_for_update(skip_locked=True, of=("self",))
            picked = candidates.values_list("pk", "team_id", "need_devices").first()
            if picked is None:
                return None
            run_id, team_id, need = picked
            limit = Team.objects.select_for_update().filter(pk=team_id).values_list("max_concurrent_runs", flat=True)
            limit = limit.first()
            if limit is not None and Run.objects.filter(team_id=team_id, status=RunStatus.RUNNING).count() >= limit:
                skipped.add(run_id)
                continue
            token = run_lease_take(run_id=run_id, worker=worker, device=device_label(devices, need),
                                   statuses=(RunStatus.QUEUED,))
            if token is not None:
                return run_id, token
            skipped.add(run_id)  # taken or cancelled meanwhile
    return None


def _team_freed(run_id: int) -> None:
    """A run of a team with a concurrency limit left `running`: a token for its next queued run.

    Its queued runs may have had their tokens dropped while the team was at its limit (a worker
    that found nothing it could take). Sent after the commit; an extra token is harmless.
    """
    team_id = Run.objects.filter(pk=run_id, team__max_concurrent_runs__isnull=False).values_list("team_id", flat=True)
    team_id = team_id.first()
    if team_id is None:
        return
    waiting = runs_claimable().filter(team_id=team_id).values_list("pk", flat=True).first()
    if waiting is not None:
        _queue_train(waiting, announce=False)


def run_token_send(*, run_id: int) -> None:
    """Send one more runs.train token for a queued run (after the commit); an extra one is harmless."""
    _queue_train(run_id, announce=False)


def run_requeue(*, run_id: int, lease_token: str, detail: str, refund_attempt: bool = False) -> bool:
    """Give the lease back and queue the run again (it resumes from its last recorded checkpoint),
    sending no token: the caller sends one when the run may train again (`run_token_send`), and the
    reaper re-sends one meanwhile lost. False (nothing written) when the lease was lost.

    For a failure of the machine rather than of the run (its volume full: workers/training.py), and
    for a worker that shuts down (`refund_attempt`: a drain is no attempt of the run's).
    """
    now = timezone.now()
    refund = {"attempts": Greatest(F("attempts") - 1, 0)} if refund_attempt else {}
    with transaction.atomic():
        requeued = Run.objects.filter(pk=run_id, lease_token=lease_token, status=RunStatus.RUNNING).update(
            status=RunStatus.QUEUED, lease_token=None, lease_expires_at=None, worker="", queued_sent_at=now,
            eta_seconds=None, drain_requested=False, **refund,
        )
        if not requeued:
            return False
        Worker.objects.filter(current_run_id=run_id).update(current_run=None)
        event_emit(run_id=run_id, event={"type": "status", "status": RunStatus.QUEUED, "detail": detail})
    return True


def run_heartbeat(*, run_id: int, lease_token: str, run_fields: dict[str, Any] | None = None) -> bool:
    """Renew the lease (and write progress); False when the lease was lost."""
    now = timezone.now()
    lease = timedelta(seconds=float(conf.get("RUNS_LEASE_SECONDS")))
    return bool(
        Run.objects.filter(pk=run_id, lease_token=lease_token).update(
            heartbeat_at=now, lease_expires_at=now + lease, **(run_fields or {})
        )
    )


def run_control_read(*, run_id: int, lease_token: str) -> tuple[bool, bool, bool]:
    """(still holds the lease, cancel requested, drain requested): one indexed read, for the
    recorder thread."""
    row = Run.objects.filter(pk=run_id).values_list("lease_token", "cancel_requested", "drain_requested").first()
    if row is None:
        return False, True, False
    return row[0] == lease_token, bool(row[1]), bool(row[2])
