"""The long seeded fault campaign: `FAULT_TRIALS=N make test-faults` (FAULT_SEED=S to vary it).

Each of N trials runs every fault once on one stack, at points drawn from the seed: SIGKILL of the
worker mid-epoch (at a random step) and mid-checkpoint-write, SIGKILL during runs.export, Redis
stopped (for a random while) and started with a run, an upload and an explanation created
meanwhile, and MEDIA_ROOT's volume full (a 64 MiB tmpfs, where mounting is permitted: an upload and
a run while it is full, space freed after). A kill of the training worker holds only when the
resumed run's replay from seq 0 is contiguous and holds every event a live watcher was sent
(faults.stream_whole). Prints a table (fault / tries / held / notes) and fails if any trial did not hold.
Skipped unless FAULT_TRIALS is set; the short default is test_faults.py.
"""

from __future__ import annotations

import os
import random
import time
from collections import defaultdict
from pathlib import Path

import pytest

from tests.stack import faults
from tests.stack.stack import RedisServer

TRIALS = int(os.environ.get("FAULT_TRIALS", "0") or 0)
SEED = int(os.environ.get("FAULT_SEED", "14"))

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not TRIALS, reason="the long campaign runs with FAULT_TRIALS=N (make test-faults)"),
    pytest.mark.skipif(not RedisServer.available(), reason="needs a redis-server binary for a private Redis"),
]


def test_fault_campaign(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    results: dict[str, list[tuple[bool, str]]] = defaultdict(list)
    started = time.monotonic()
    media = tmp_path / "stack" / "media"
    not_mounted = faults.mount_tmpfs(media, mib=64)
    try:
        logs = _campaign(tmp_path, rng, results, small_media=not not_mounted)
    finally:
        if not not_mounted:
            faults.unmount(media)
    note = f"MEDIA_ROOT volume full: not run, a small tmpfs cannot be mounted ({not_mounted})" if not_mounted else ""
    _report(results, started, logs=logs, note=note)


def _campaign(tmp_path: Path, rng: random.Random, results: dict[str, list[tuple[bool, str]]], *,
              small_media: bool) -> str:
    """Every trial's moves on one stack; the stack's logs."""
    with faults.fault_stack(tmp_path) as stack:
        trained = stack.create_run(epochs=1)
        assert faults.run_finished(stack, trained["id"])["status"] == "succeeded", stack.logs()
        for trial in range(TRIALS):
            moves = [
                ("SIGKILL mid-epoch", lambda: faults.kill_mid_epoch(stack, at_step=rng.randint(2, 18))),
                ("SIGKILL mid-checkpoint-write", lambda: faults.kill_mid_checkpoint_write(stack)),
                ("SIGKILL during runs.export", lambda: faults.kill_during_export(stack)),
                ("Redis stopped and started", lambda: faults.redis_outage(
                    stack, trained["id"], outage_s=round(rng.uniform(0.5, 3.0), 2))),
            ]
            if small_media:
                moves.append(("MEDIA_ROOT volume full", lambda: faults.disk_full(stack)))
            rng.shuffle(moves)
            for name, move in moves:
                try:
                    results[name].append(move())
                except Exception as exc:  # noqa: BLE001 - every failed move is a row of the table
                    results[name].append((False, f"trial {trial}: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"))
                    if stack.redis.proc is None:  # leave the stack whole for the next move
                        stack.redis.start()
                    if stack.worker is None or stack.worker.poll() is not None:
                        stack.start_worker()
                    faults.unfill_volume(stack.tmp / "media")
        return stack.logs()


def _report(results: dict[str, list[tuple[bool, str]]], started: float, *, logs: str, note: str) -> None:
    lines = [f"fault campaign: {TRIALS} trials, seed {SEED}, {time.monotonic() - started:.0f} s",
             f"{'fault':32} {'tries':>5} {'held':>5}  last note"]
    for name, outcomes in results.items():
        held = sum(ok for ok, _ in outcomes)
        lines.append(f"{name:32} {len(outcomes):>5} {held:>5}  {outcomes[-1][1]}")
    table = "\n".join(lines + ([note] if note else []))
    print("\n" + table)
    failures = [note for outcomes in results.values() for ok, note in outcomes if not ok]
    assert not failures, table + "\n" + "\n".join(failures) + "\n" + logs
