"""Which devices this worker process owns, and so which runs it fits (no Django models here).

A training worker's devices come from, in this order:
- the `cuda` entries of NETLOOM_DEVICES in its environment (`cuda:0,cuda:1`; a bare `cuda`
  means every GPU CUDA_VISIBLE_DEVICES shows, or one);
- else CUDA_VISIBLE_DEVICES (`0,1` -> cuda:0, cuda:1: indices as the process sees them);
- else the CPU, with capacity NETLOOM_CPU_PROCESSES (default 8): gloo ranks of a CPU run share
  the machine's cores, so a CPU worker takes runs of up to that many processes.

The kind ("gpu" or "cpu") and the capacity (number of devices) pick the train queues it
consumes (webapp/queues.py::train_queues_for). A run's need (`run_need`) is read from its
config: `device` ("cpu" -> cpu, "cuda"/"cuda:N" -> gpu, "auto" -> any) and `processes`.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from webapp.queues import MAX_DEVICES, train_queue, train_queues_for


@dataclass(frozen=True)
class WorkerDevices:
    """What one training worker owns: its kind, its devices and how many a run may use."""

    kind: str
    devices: list[str]
    capacity: int
    train_queues: list[str] = field(default_factory=list)

    def fits(self, *, kind: str, devices: int) -> bool:
        """True when a run that needs `devices` devices of `kind` can run here."""
        return kind in (self.kind, "any") and devices <= self.capacity


def _visible_gpus() -> list[str]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if not visible or visible == "-1":
        return []
    return [
        f"cuda:{index}"
        for index, _ in enumerate(part for part in visible.split(",") if part.strip())
    ]


def worker_devices() -> WorkerDevices:
    """This process's devices (see the module docstring)."""
    named = [str(name).strip() for name in getattr(settings, "NETLOOM_DEVICES", ["cpu"])]
    gpus = [name for name in named if name.startswith("cuda:")]
    if not gpus and "cuda" in named:
        gpus = _visible_gpus() or ["cuda:0"]
    if not gpus and not any(name.startswith("cuda") for name in named):
        gpus = _visible_gpus()
    if gpus:
        gpus = gpus[:MAX_DEVICES]
        return WorkerDevices("gpu", gpus, len(gpus), train_queues_for("gpu", len(gpus)))
    capacity = min(
        max(int(getattr(settings, "NETLOOM_CPU_PROCESSES", MAX_DEVICES)), 1), MAX_DEVICES
    )
    return WorkerDevices("cpu", ["cpu"], capacity, train_queues_for("cpu", capacity))


_this: list[WorkerDevices] = []


def this_worker() -> WorkerDevices:
    """worker_devices() of this process, read once."""
    if not _this:
        _this.append(worker_devices())
    return _this[0]


def device_label(worker: WorkerDevices, devices: int) -> str:
    """What a run of `devices` devices trains on here: "cpu" (xN processes) or "cuda:0,cuda:1"."""
    if worker.kind == "cpu":
        return "cpu" if devices <= 1 else f"cpu x{devices}"
    return ",".join(worker.devices[:devices])


def run_need(config: dict[str, Any]) -> tuple[str, int]:
    """(kind, devices) a run's config asks for: kind "cpu", "gpu" or "any"; devices = processes
    (x nodes for a run over several machines: every rank's device)."""
    device = str(config.get("device") or "auto")
    kind = "cpu" if device == "cpu" else "gpu" if device.startswith("cuda") else "any"
    try:
        devices = int(config.get("processes") or 1) * int(config.get("nodes") or 1)
    except (TypeError, ValueError):
        devices = 1
    return kind, max(1, devices)


def run_need_queue(config: dict[str, Any]) -> str:
    """The train queue for a run of this config."""
    return train_queue(*run_need(config))


def host_name() -> str:
    """This machine's name (for a worker row when Celery gave none)."""
    return socket.gethostname()
