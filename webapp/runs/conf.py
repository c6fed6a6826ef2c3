"""Defaults of the runs app; a Django setting of the same name overrides each one."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from django.conf import settings

DEFAULTS: dict[str, Any] = {
    # Where run folders (checkpoints, exports, explanation images) live; None: MEDIA_ROOT/runs.
    "RUNS_ROOT": None,
    # A worker owns a run while its lease is fresh; it renews the lease on every heartbeat.
    # Short, so a killed worker's run trains again elsewhere within seconds (docs/benchmarks.md,
    # "Recovery after SIGKILL"): lease 8 s = four heartbeats, a reaper pass every 2 s.
    "RUNS_LEASE_SECONDS": 8.0,
    "RUNS_HEARTBEAT_SECONDS": 2.0,
    # How often the worker's recorder thread reads the cancel flag (never once per step).
    "RUNS_CONTROL_POLL_SECONDS": 0.5,
    # Worker-lost retries: a run is tried at most this many times before it fails.
    "RUNS_MAX_ATTEMPTS": 3,
    # How often each worker's reaper thread looks for runs whose lease expired (and announces
    # the worker: its row's last_seen, webapp/runs/scheduling/workers.py::worker_announce).
    "RUNS_REAP_SECONDS": 2.0,
    # The recorder writes a batch at least this often and publishes at most this many times/s.
    "RUNS_FLUSH_SECONDS": 0.2,
    "RUNS_PUBLISH_PER_SECOND": 4.0,
    # Events waiting for the database; beyond this the trainer's points are dropped, not awaited.
    "RUNS_RECORDER_QUEUE": 100_000,
    # Deliberately slows every training step (demos, tests that must catch a run mid-way).
    "RUNS_STEP_DELAY_SECONDS": 0.0,
    # Crash leftovers (.tmp/.old folders of checkpoints and exports, .part uploads) older than this
    # are removed at worker start and by the reaper, at most once per RUNS_SWEEP_SECONDS.
    "RUNS_LEFTOVER_SECONDS": 3600.0,
    "RUNS_SWEEP_SECONDS": 300.0,
    # A run queued longer than this (not cancelled) gets runs.train sent again, at most once per
    # this interval: the broker may have lost its message (Redis restarted without persistence).
    # The lease makes a duplicate harmless (it returns at once).
    "RUNS_REQUEUE_QUEUED_SECONDS": 120.0,
    # A run whose volume was full is queued again, and its worker waits at most this long for the
    # volume to have NETLOOM_DISK_MARGIN_BYTES free before sending it to train (workers/training.py).
    "RUNS_SPACE_WAIT_SECONDS": 300.0,
    # NETLOOM_RUNNER=kubernetes: how often the worker watching a run's Job reads it (and its pods,
    # its Kueue Workload), and how long a stopped Job may take to end before it is deleted.
    "RUNS_K8S_POLL_SECONDS": 2.0,
    "RUNS_K8S_STOP_GRACE_SECONDS": 120.0,
}
# Queue and task names are not settings: they live in webapp/queues.py (one place for the web
# side, the workers and `make run`).


def get(name: str) -> Any:
    """The setting `name`, or its default."""
    return getattr(settings, name, DEFAULTS[name])


def runs_root() -> Path:
    """Folder that holds one sub-folder per run."""
    return Path(_root_folder(get("RUNS_ROOT"), settings.MEDIA_ROOT))


def run_dir(run_id: int) -> Path:
    """Folder of one run: checkpoints/, export/, explanations/."""
    return runs_root() / str(int(run_id))


def run_folder(run_id: int) -> str:
    """run_dir(run_id) as a string, for a finished run's detail (its every answer reads the run's
    files: pathlib's parsing and joins were a tenth of that answer's time)."""
    return os.path.join(_root_folder(get("RUNS_ROOT"), settings.MEDIA_ROOT), str(int(run_id)))


@functools.lru_cache(maxsize=8)
def _root_folder(root: Any, media_root: Any) -> str:
    """RUNS_ROOT, else MEDIA_ROOT/runs: the one rule for runs_root and run_folder."""
    return str(Path(root) if root else Path(media_root) / "runs")
