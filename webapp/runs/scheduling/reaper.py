"""The reaper: runs whose worker stopped heartbeating, runs.train sends owed or lost, and the jobs'
pass (webapp/jobs: explanations, exports, dataset processing).

Safe to run from many workers at once: every transition is a conditional UPDATE.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from webapp.jobs.sending import backed_off

from .. import conf
from ..models import Run, RunStatus, Worker
from ..signals import run_finished_send
from ..stream.events import event_emit
from .leases import _team_freed
from .sends import _queue_train

logger = logging.getLogger(__name__)


def run_reap_worker(*, worker: str) -> list[int]:
    """At a worker's start: the runs still leased under its own name are its dead predecessor's.

    They are interrupted and requeued at once (as run_reap does when a lease expires), so a
    worker restarted on the same host resumes them without waiting for the lease to run out.
    """
    held = Run.objects.filter(status=RunStatus.RUNNING, worker=worker[:200], lease_token__isnull=False)
    return run_reap(now=timezone.now(), runs=held, why="its worker restarted")


def run_reap(
    *, now: Any = None, runs: Any = None, why: str = "worker lost", keep: Collection[int] = ()
) -> list[int]:
    """Mark runs whose worker stopped heartbeating `interrupted`, then requeue or fail them.

    Also sends every task whose send is owed or whose message looks lost: runs.train for runs
    queued too long (run_resend_queued), every job's (webapp/jobs: jobs_reap, the one path for
    explanations, exports and dataset processing); and removes crash leftovers (leftovers_sweep). Safe to run from many workers at once: every transition is a
    conditional UPDATE. Returns the ids of the runs it interrupted.

    `runs` (run_reap_worker): interrupt these running runs whatever their lease says, and
    nothing else. `keep`: runs the calling process itself is training (its recorders renew their
    leases; workers/recorder.py::live_run_ids), never interrupted by it however late their lease.
    """
    now = now or timezone.now()
    reaped: list[int] = []
    if runs is None:
        held = Run.objects.filter(status=RunStatus.RUNNING, lease_expires_at__lt=now).exclude(pk__in=list(keep))
    else:
        held = runs.filter(status=RunStatus.RUNNING)
    expired = list(held.values_list("pk", "lease_token", "attempts", "max_attempts", "heartbeat_at", "step"))
    for run_id, token, attempts, max_attempts, heartbeat_at, step in expired:
        with transaction.atomic():
            still = Run.objects.filter(pk=run_id, status=RunStatus.RUNNING, lease_token=token)
            if runs is None:
                still = still.filter(lease_expires_at__lt=now)
            lost = still.update(status=RunStatus.INTERRUPTED, lease_token=None, lease_expires_at=None, worker="")
            if not lost:
                continue
            reaped.append(run_id)
            Worker.objects.filter(current_run_id=run_id).update(current_run=None)
            since = heartbeat_at.isoformat() if heartbeat_at else "never"
            event_emit(run_id=run_id, event={
                "type": "status", "status": RunStatus.INTERRUPTED,
                "detail": f"{why} (last heartbeat {since}, step {step})",
            })
            if attempts < max_attempts:
                Run.objects.filter(pk=run_id, status=RunStatus.INTERRUPTED).update(
                    status=RunStatus.QUEUED, queued_sent_at=now
                )
                event_emit(run_id=run_id, event={
                    "type": "status", "status": RunStatus.QUEUED,
                    "detail": f"requeued to resume from its last checkpoint (attempt {attempts + 1} of {max_attempts})",
                })
                _queue_train(run_id)
            else:
                message = f"The worker was lost {attempts} times; giving up."
                Run.objects.filter(pk=run_id, status=RunStatus.INTERRUPTED).update(
                    status=RunStatus.FAILED, finished_at=now, error=message
                )
                event_emit(run_id=run_id, event={
                    "type": "status", "status": RunStatus.FAILED, "detail": message, "error": message,
                })
                _team_freed(run_id)
                run_finished_send(run_id=run_id, status=RunStatus.FAILED)
    if reaped:
        logger.warning("reaped runs (%s): %s", why, reaped)
    if runs is not None:
        return reaped
    run_resend_queued(now=now)
    _jobs_reap(now=now)
    leftovers_sweep(now=now)
    return reaped


def _jobs_reap(*, now: Any) -> None:
    from webapp.jobs.services import jobs_reap

    jobs_reap(now=now)


def leftovers_sweep(*, now: Any = None, older_than_s: float | None = None) -> list[Path]:
    """Remove crash leftovers: `.<name>.tmp-<hex>`/`.old-<hex>` checkpoint and export folders
    below the runs root, and `MEDIA_ROOT/uploads/*.part` uploads nobody finished.

    Only what is older than RUNS_LEFTOVER_SECONDS (a writer may still be using a younger
    one; an upload still arriving keeps its .part file fresh). At most once per
    RUNS_SWEEP_SECONDS per process (every reaper pass calls this). Returns the paths removed.
    """
    from engine.atomic import sweep_leftovers
    from webapp.datasets.services import upload_leftovers_sweep

    moment = (now or timezone.now()).timestamp()
    if older_than_s is None:
        if moment - _last_sweep[0] < float(conf.get("RUNS_SWEEP_SECONDS")):
            return []
        _last_sweep[0] = moment
    age = float(conf.get("RUNS_LEFTOVER_SECONDS")) if older_than_s is None else older_than_s
    removed = sweep_leftovers(conf.runs_root(), older_than_s=age)
    # An upload still arriving is written to every few milliseconds; one untouched for minutes was
    # cut off (a killed web process): it goes sooner than a checkpoint's leftovers.
    removed += upload_leftovers_sweep(older_than_s=min(age, float(settings.NETLOOM_UPLOAD_STALE_SECONDS)))
    if removed:
        logger.warning("removed crash leftovers: %s", [str(p) for p in removed])
    return removed


_last_sweep = [0.0]


def run_resend_queued(*, now: Any = None) -> list[int]:
    """Send runs.train again for runs queued longer than RUNS_REQUEUE_QUEUED_SECONDS; their ids.

    The broker may have lost the message (Redis restarted without persistence before a worker
    took it); nothing else would ever train such a run. A duplicate is harmless: the delivery
    that cannot take the lease returns at once. A lost message cannot be told from one waiting
    behind a long run, so the wait doubles after each re-send (120 s, 240 s, 480 s, ...: the
    next one is due when the run has waited as long again as it had at the last send), which
    keeps a run queued behind a two-hour run to a handful of duplicates. Only the reaper whose
    conditional UPDATE of `queued_sent_at` wins sends.
    """
    now = now or timezone.now()
    interval = float(conf.get("RUNS_REQUEUE_QUEUED_SECONDS"))
    cutoff = now - timedelta(seconds=interval)
    # Rows older than the field have no queued_sent_at: their creation time stands in for it.
    stale = Q(queued_sent_at__lt=cutoff) | Q(queued_sent_at__isnull=True, created_at__lt=cutoff)
    waiting = Run.objects.filter(status=RunStatus.QUEUED, cancel_requested=False)
    resent: list[int] = []
    # Owed first: their send failed (the broker was down); try again at every pass until it works.
    for run_id in list(waiting.filter(queued_send_owed=True).values_list("pk", flat=True)):
        if waiting.filter(pk=run_id, queued_send_owed=True).update(queued_send_owed=False, queued_sent_at=now):
            resent.append(run_id)
            _queue_train(run_id, announce=False)
    for run_id, sent_at, created_at in list(
        waiting.filter(stale, queued_send_owed=False).values_list("pk", "queued_sent_at", "created_at")
    ):
        last = sent_at or created_at
        if backed_off(now=now, last=last, origin=created_at, interval=interval):
            continue  # backing off: not yet waited as long again as at the last send
        with transaction.atomic():
            if not waiting.filter(pk=run_id, queued_sent_at=sent_at).update(queued_sent_at=now):
                continue  # another reaper sent it, a worker took it, or it was cancelled
            resent.append(run_id)
            waited = int((now - (sent_at or created_at)).total_seconds())
            event_emit(run_id=run_id, event={
                "type": "log", "level": "warning",
                "message": f"still queued {waited} s after training was last asked for; "
                           "sent again (the broker may have lost the message)",
            })
            _queue_train(run_id, announce=False)
    if resent:
        logger.warning("re-sent runs.train for runs queued too long or owed: %s", resent)
    return resent
