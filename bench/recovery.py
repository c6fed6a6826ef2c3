"""Recovery after SIGKILL: how long from killing the worker that trains a run until the run is
running again on another worker, over several trials (docs/benchmarks.md, "Recovery after SIGKILL").

    .venv/bin/python bench/recovery.py [--trials 10] [--write]

A real stack (tests/stack/stack.py: its own database, Redis prefix, the ASGI server) with two training
workers (solo pool, `-Q train,short`) and the production timings of webapp/runs/conf.py (lease,
heartbeat, reaper: bench/stack/recovery_settings.py). Each trial starts a long run, waits until
it is running, SIGKILLs the worker that trains it, and times until GET /api/runs/<id>/ says `running`
on the other worker; then it cancels the run and starts a worker again under the killed one's
name. `--write` puts the figures into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.stack.stack import RedisServer, ServiceStack  # noqa: E402

HEADING = "## Recovery after SIGKILL"
COMMAND = ".venv/bin/python bench/recovery.py --trials 10 --write"


def poll(stack: ServiceStack, run_id: int, done: Any, timeout: float = 120.0) -> dict[str, Any]:
    """GET the run until `done(run)`; the run."""
    deadline = time.monotonic() + timeout
    while True:
        run = stack.api("a").get(f"/api/runs/{run_id}/").json()
        if done(run):
            return run
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"run {run_id}: {run['status']} on {run['worker']!r}\n{stack.logs()}"
            )
        time.sleep(0.05)


class Workers:
    """The stack's training workers by name (each a solo-pool Celery process)."""

    def __init__(self, stack: ServiceStack) -> None:
        self.stack = stack
        self.procs: dict[str, subprocess.Popen] = {}
        self.started = 0

    def start(self, name: str) -> None:
        """Start a worker named `name` and wait for its "ready" line (a fresh log per start)."""
        self.started += 1
        log = self.stack.tmp / f"{name}-{self.started}.log"
        args = self.stack._worker_args(("train", "short"), name)
        self.procs[f"{name}-{self.stack.prefix}"] = subprocess.Popen(
            args, cwd=ROOT, env=self.stack.env, stdout=open(log, "ab"), stderr=subprocess.STDOUT
        )
        self.stack._wait_ready(self.procs[f"{name}-{self.stack.prefix}"], log, 120)

    def kill(self, hostname: str) -> str:
        """SIGKILL the worker named `hostname` (celery's `name@host`); its short name."""
        key = hostname.split("@", 1)[0]
        proc = self.procs.pop(key)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        return key.removesuffix(f"-{self.stack.prefix}")

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()


def trials(count: int) -> list[float]:
    """Seconds from SIGKILL to running again, one per trial."""
    figures: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        redis = RedisServer.shared(db=5)
        env = {"DJANGO_SETTINGS_MODULE": "bench.stack.recovery_settings"}
        with ServiceStack(Path(tmp), redis, step_delay=0.05, env=env) as stack:
            stack.stop_worker()  # the stack's own worker: replaced by two named ones
            workers = Workers(stack)
            try:
                workers.start("wa")
                workers.start("wb")
                for trial in range(count):
                    run = stack.create_run("a", epochs=5000)
                    running = poll(
                        stack, run["id"], lambda r: r["status"] == "running" and r["worker"]
                    )
                    lost = running["worker"]
                    time.sleep(2.5)  # mid-run: a heartbeat or two after the start
                    name = workers.kill(lost)
                    killed = time.monotonic()
                    poll(
                        stack,
                        run["id"],
                        lambda r, lost=lost: (
                            r["status"] == "running" and r["worker"] not in ("", lost)
                        ),
                    )
                    figures.append(time.monotonic() - killed)
                    print(f"trial {trial + 1}: {figures[-1]:.1f} s", flush=True)
                    stack.api("a").post(f"/api/runs/{run['id']}/cancel/")
                    poll(
                        stack,
                        run["id"],
                        lambda r: r["status"] in ("cancelled", "failed", "succeeded"),
                    )
                    workers.start(name)
            finally:
                workers.stop()
    return figures


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def section(figures: list[float]) -> str:
    """The docs/benchmarks.md section for these figures."""
    from webapp.runs.conf import DEFAULTS

    lease, beat, reap = (
        DEFAULTS[k] for k in ("RUNS_LEASE_SECONDS", "RUNS_HEARTBEAT_SECONDS", "RUNS_REAP_SECONDS")
    )
    rows = " | ".join(f"{f:.1f}" for f in figures)
    return f"""{HEADING}

Command: `{COMMAND}`. A real stack (uvicorn through webapp/serve.py, two solo-pool Celery workers on `-Q train,short`,
Redis, SQLite) with the production timings of webapp/runs/conf.py: lease {lease:g} s, heartbeat
{beat:g} s, reaper pass {reap:g} s. Each trial starts a long run, SIGKILLs the worker training it
a few seconds in, and times until `GET /api/runs/<id>/` says `running` on the other worker (the
reaper's pass after the lease runs out, then the run's new token, claimed by the idle worker).
{len(figures)} trials on the shared 2-core development machine (python {platform.python_version()}).

| trials | median (s) | p90 (s) | max (s) |
|--------|------------|---------|---------|
| {len(figures)} | {statistics.median(figures):.1f} | {percentile(figures, 0.9):.1f} | {max(figures):.1f} |

Each trial (s): {rows}.

What it is made of: the lease runs out {lease - beat:g}-{lease:g} s after the kill ({lease:g} s after the last heartbeat), the next
reaper pass (every {reap:g} s) requeues the run and sends its token, and the idle worker claims it;
the rest is that claim and the HTTP poll (more on a loaded machine). A worker restarted under the
dead one's name takes the run back at its start without waiting for the lease
(services.run_reap_worker).
"""


def write_docs(text: str) -> None:
    path = ROOT / "docs" / "benchmarks.md"
    doc = path.read_text(encoding="utf-8")
    pattern = re.compile(rf"^{re.escape(HEADING)}\n.*?(?=^## |\Z)", re.S | re.M)
    doc = pattern.sub(text + "\n", doc) if pattern.search(doc) else doc.rstrip("\n") + "\n\n" + text
    path.write_text(doc, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument(
        "--write", action="store_true", help="put the figures into docs/benchmarks.md"
    )
    args = parser.parse_args()
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    figures = trials(args.trials)
    print(
        json.dumps(
            {
                "median_s": statistics.median(figures),
                "p90_s": percentile(figures, 0.9),
                "max_s": max(figures),
                "trials": figures,
            }
        )
    )
    text = section(figures)
    print(text)
    if args.write:
        write_docs(text)
    return 0 if statistics.median(figures) <= 15.0 else 1


if __name__ == "__main__":
    sys.exit(main())
