"""The worker registry: each worker's row (devices, queues, current run, last seen)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from ..models import Run, RunStatus, Worker
from .devices import WorkerDevices
from .reaper import run_reap_worker


def worker_announce(*, hostname: str, devices: WorkerDevices | None, queues: list[str], now: Any = None) -> None:
    """Upsert this worker's row (at start and on every reaper pass): its devices, queues, last_seen.

    `devices` None: a worker without a train queue (short jobs only). Its current run is the
    one leased under its name, if any (run_lease_take sets it, run_finish clears it).
    """
    now = now or timezone.now()
    hostname = hostname[:200]
    current = (
        Run.objects.filter(status=RunStatus.RUNNING, worker=hostname, lease_token__isnull=False)
        .values_list("pk", flat=True).first()
    )
    fields = {
        "kind": devices.kind if devices else "cpu",
        "devices": list(devices.devices) if devices else [],
        "capacity": devices.capacity if devices else 0,
        "queues": sorted(queues),
        "current_run_id": current,
        "last_seen": now,
    }
    if not Worker.objects.filter(hostname=hostname).update(**fields):
        Worker.objects.get_or_create(hostname=hostname, defaults={**fields, "started_at": now})


def worker_start(*, hostname: str, devices: WorkerDevices | None, queues: list[str]) -> list[int]:
    """A worker starts: reap the runs its dead predecessor (same name) still holds; announce it.

    Returns the ids of the runs it requeued.
    """
    now = timezone.now()
    reaped = run_reap_worker(worker=hostname) if devices is not None else []
    Worker.objects.filter(hostname=hostname[:200]).update(started_at=now)
    worker_announce(hostname=hostname, devices=devices, queues=queues, now=now)
    return reaped


def worker_drain(*, hostname: str) -> list[int]:
    """The worker `hostname` is shutting down: ask each run it trains to stop, checkpoint and queue
    again (its recorder reads the flag with the cancel flag). The ids of those runs."""
    running = Run.objects.filter(worker=hostname[:200], status=RunStatus.RUNNING, cancel_requested=False)
    ids = list(running.values_list("pk", flat=True))
    if ids:
        Run.objects.filter(pk__in=ids).update(drain_requested=True)
    return ids


def worker_forget(*, hostname: str) -> None:
    """A worker that shuts down cleanly removes its row (a killed one stays, no longer alive)."""
    Worker.objects.filter(hostname=hostname[:200]).delete()
