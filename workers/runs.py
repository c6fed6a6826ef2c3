"""Celery tasks of runs: train, reap. Thin: load, check, call, record.

Each task takes ids, returns at once when its work is done, cancelled or owned by another
delivery (a redelivered message is harmless), calls the engine or a service, and records the
outcome through the runs app's services; exceptions become messages a user can act on.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from celery import signals
from django.conf import settings
from django.db import close_old_connections

from webapp.celery import app
from webapp.queues import (
    KUBERNETES_QUEUE,
    RUNS_REAP,
    RUNS_TRAIN,
    TRAIN_QUEUE,
    TRAIN_QUEUES,
)
from webapp.runs import conf
from webapp.runs.models import (
    TERMINAL_STATUSES,
    Run,
    RunStatus,
)
from webapp.runs.scheduling.devices import device_label, host_name, this_worker
from webapp.runs.scheduling.leases import run_claim, run_lease_take
from webapp.runs.scheduling.reaper import leftovers_sweep, run_reap
from webapp.runs.scheduling.workers import worker_announce, worker_forget, worker_start
from webapp.runs.services import run_cancel
from workers.recorder import RunRecorder, live_run_ids
from workers.training import train_claimed

logger = logging.getLogger(__name__)


def _token_claim(task: Any, run_id: int) -> tuple[int, str] | str:
    """What a runs.train token gets this worker: (run id, lease token), or why it trains nothing.

    The token names the run it was sent for (`run_id`), but the worker claims the fairest queued
    run its devices fit (services.run_claim). Failing that, the named run itself when its
    previous worker's lease has run out (a redelivered message before the reaper's pass).
    A token from another need's queue than the claimed run's is sent on for the named run, so
    every queued run keeps one.
    """
    worker = task.request.hostname or host_name()
    devices = this_worker()
    named = Run.objects.filter(pk=run_id).first()
    cancelled = named is not None and named.cancel_requested and named.status in (
        RunStatus.QUEUED, RunStatus.INTERRUPTED)
    if cancelled:
        run_cancel(run=named)
    claimed = run_claim(worker=worker, devices=devices)
    if claimed is not None:
        _token_pass_on(task, named_id=run_id, claimed_id=claimed[0])
        return claimed
    if named is None:
        return "missing"
    named.refresh_from_db()
    if named.status in TERMINAL_STATUSES:
        return "cancelled" if cancelled else "done"
    if named.status == RunStatus.QUEUED:
        return "waiting"  # over its team's limit, or not fitting here: its team's next finish re-sends
    if not devices.fits(kind=named.need_kind, devices=named.need_devices):
        return "not fitting"
    token = run_lease_take(run_id=run_id, worker=worker, device=device_label(devices, named.need_devices),
                           statuses=(RunStatus.RUNNING, RunStatus.INTERRUPTED))
    return (run_id, token) if token is not None else "leased elsewhere"


def _token_pass_on(task: Any, *, named_id: int, claimed_id: int) -> None:
    """Re-send the token for the named run when it came from another queue than the claimed run's."""
    from webapp.queues import train_queue
    from webapp.runs.scheduling.leases import run_token_send

    taken_from = (getattr(task.request, "delivery_info", None) or {}).get("routing_key")
    if not taken_from or taken_from not in TRAIN_QUEUES or claimed_id == named_id:
        return
    need = Run.objects.filter(pk=claimed_id).values_list("need_kind", "need_devices").first()
    if need and train_queue(*need) != taken_from and Run.objects.filter(pk=named_id, status=RunStatus.QUEUED).exists():
        run_token_send(run_id=named_id)


@app.task(name=RUNS_TRAIN, bind=True, acks_late=True, reject_on_worker_lost=True)
def train_run(self: Any, run_id: int) -> str:
    """Train the fairest queued run this worker fits (or resume it from its last recorded
    checkpoint) while holding its lease; `run_id` is the run the token was sent for."""
    _claiming.set()  # until its recorder renews the lease, this process's reaper waits
    try:
        claimed = _token_claim(self, run_id)
        if isinstance(claimed, str):
            return claimed
        run_id, token = claimed
        run = Run.objects.select_related("graph_revision", "dataset").get(pk=run_id)
        recorder = RunRecorder(run_id, token)
        recorder.progress(step=run.step, epoch=run.epoch, total_steps=run.total_steps)
        recorder.start()
    finally:
        _claiming.clear()
    return train_claimed(run, token=token, recorder=recorder)


@app.task(name=RUNS_REAP)
def reap_runs() -> list[int]:
    """Interrupt and requeue runs whose worker stopped heartbeating (for `celery beat`)."""
    return run_reap(keep=live_run_ids())


# --- a reaper on a timer inside every worker (so `make run` needs no beat process) ------------

_reaper_started = threading.Event()
# Set while this process's runs.train task claims a run and starts its recorder (a solo pool's
# task shares the process with the reaper thread).
_claiming = threading.Event()


_this_worker: dict[str, Any] = {}


def _announce(**fields: Any) -> None:
    """worker_announce for this worker (no-op before worker_ready named it)."""
    if _this_worker:
        worker_announce(hostname=_this_worker["hostname"], devices=_this_worker["devices"],
                        queues=_this_worker["queues"], **fields)


def _reaper_loop() -> None:
    interval = float(conf.get("RUNS_REAP_SECONDS"))
    try:  # what a crash of the last worker left behind (the reaper repeats it now and then)
        leftovers_sweep(older_than_s=float(conf.get("RUNS_LEFTOVER_SECONDS")))
    except Exception:
        logger.exception("sweeping crash leftovers failed")
    slept, skipped = interval, False
    while True:
        try:
            close_old_connections()
            _announce()  # the worker's heartbeat: GET /api/workers/ says it is alive
            skipped = reaper_pass(slept=slept, interval=interval, skipped=skipped)
        except Exception:
            logger.exception("reaper failed")
        started = time.monotonic()
        time.sleep(interval)
        slept = time.monotonic() - started


def reaper_pass(*, slept: float, interval: float, skipped: bool) -> bool:
    """One pass of a worker's reaper; True when it skipped it (it woke late, or a claim is in flight).

    A sleep that overran by more than the interval means this process, or the whole host, stood
    still, and every heartbeat with it (a prefork worker's children, other workers on the host):
    leases may have run out only for that. Such a pass waits for the next, so the heartbeats come
    first; never two passes in a row, so a host that is always late still reaps. A pass also
    waits while this process is claiming a run. Never reaped here: the runs this process itself
    trains (a solo pool's task; workers.recorder.live_run_ids).
    """
    if not skipped and _claiming.is_set():
        # The lease was stamped before the claim's commit (a slow commit can eat it): its
        # recorder, about to start, renews it at once.
        logger.info("reaper waits a pass: this process is claiming a run")
        return True
    if slept > 2 * interval and not skipped:
        logger.info("reaper woke %.1f s late: the next pass reaps, after the heartbeats", slept - interval)
        return True
    run_reap(keep=live_run_ids())
    return False


@signals.worker_ready.connect
def _start_reaper(sender: Any = None, **_: Any) -> None:
    """Announce this worker (its devices and queues), take back what its dead predecessor of the
    same name still holds, and start its reaper thread (once)."""
    if _reaper_started.is_set():
        return
    _reaper_started.set()
    hostname = getattr(sender, "hostname", None) or host_name()
    queues = sorted(sender.app.amqp.queues.consume_from) if sender is not None else []
    devices = this_worker() if any(name in TRAIN_QUEUES for name in queues) else None
    _this_worker.update(hostname=hostname, devices=devices, queues=queues)
    try:
        reaped = worker_start(hostname=hostname, devices=devices, queues=queues)
        if reaped:
            logger.warning("worker %s: requeued the runs its predecessor held: %s", hostname, reaped)
    except Exception:
        logger.exception("worker %s: announcing it failed (the reaper tries again)", hostname)
    finally:
        close_old_connections()
    threading.Thread(target=_reaper_loop, name="runs-reaper", daemon=True).start()


@signals.worker_shutting_down.connect
def _drain_runs(**_: Any) -> None:
    """SIGTERM (a scale-down, a node drain, `docker compose stop`): the runs this worker trains stop
    within a step, checkpoint and are queued again for another worker, instead of holding the
    shutdown until they end. The training may run in a pool child: the flag goes through the
    database, where its recorder reads the cancel flag. A thread: this runs in a signal handler.

    The worker of the "kubernetes" queue drains the same way: the Jobs it watches get their stop
    file, their ranks checkpoint at the step, and the next delivery makes a Job that resumes there."""
    watches_jobs = KUBERNETES_QUEUE in (_this_worker.get("queues") or [])
    if not _this_worker or (_this_worker.get("devices") is None and not watches_jobs):
        return

    def drain() -> None:
        from webapp.runs.scheduling.workers import worker_drain

        try:
            close_old_connections()
            ids = worker_drain(hostname=_this_worker["hostname"])
            if ids:
                logger.warning("worker %s shutting down: runs %s checkpoint and are queued again",
                               _this_worker["hostname"], ids)
        except Exception:
            logger.exception("could not ask this worker's runs to stop and queue again")
        finally:
            close_old_connections()

    threading.Thread(target=drain, name="drain-runs", daemon=True).start()


@signals.worker_shutdown.connect
def _forget_worker(**_: Any) -> None:
    """A clean shutdown removes this worker's row (GET /api/workers/ no longer lists it)."""
    if not _this_worker:
        return
    try:
        close_old_connections()
        worker_forget(hostname=_this_worker["hostname"])
    except Exception:
        logger.exception("could not remove the worker's row")


@signals.celeryd_after_setup.connect
@signals.worker_process_init.connect
def _torch_threads(**_: Any) -> None:
    """NETLOOM_WORKER_THREADS > 0: torch's intra-op threads in this worker process (set before its
    first task: the solo pool's worker itself, or a forked pool child), and OMP_NUM_THREADS for
    the processes it starts (a multi-process run's ranks)."""
    threads = settings.NETLOOM_WORKER_THREADS
    if threads <= 0:
        return
    import torch

    torch.set_num_threads(threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)


@signals.celeryd_after_setup.connect
def _train_queues_for_this_worker(sender: str, instance: Any, **_: Any) -> None:
    """A worker started on "train" consumes the train queues its devices fit, not "train" itself.

    Runs before the worker consumes anything; the devices it found are logged and announced
    (webapp/runs/scheduling/workers.py::worker_announce, from workers/runs.py).
    """
    queues = instance.app.amqp.queues
    if TRAIN_QUEUE not in queues.consume_from:
        return
    worker = this_worker()
    queues.deselect(TRAIN_QUEUE)
    for name in worker.train_queues:
        # The declared Queue (its own exchange), not a new one bound to the default exchange.
        queues.select_add(queues[name] if name in queues else name)
    logger.warning("worker %s: devices %s (%s, capacity %d); train queues %s; torch threads %s", sender,
                   ",".join(worker.devices), worker.kind, worker.capacity, ",".join(worker.train_queues),
                   settings.NETLOOM_WORKER_THREADS or "torch's default")
