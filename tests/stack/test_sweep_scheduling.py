"""A sweep's trials never wait while a fitting worker is idle, for any parallelism.

Split workers as under `make run` (one on the train queues, one on the short queue), SQLite.
For each trial run: how long it was queued while the training worker had nothing to do
(from max(its creation, the previous run's end) to its start). A token a worker drops shows as a
wait of a whole re-send interval (120 s), far over the bound checked here.

With two training workers (two real Celery processes on `-Q train`, as two machines would be), a
trial's idle wait is the time between its creation and its start during which at least one of
them ran nothing; and the trials must have run on both.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest

from tests.stack.stack import RedisServer, ServiceStack
from tests.stack.test_sweep_e2e import sweep_body, wait_sweep

pytestmark = [pytest.mark.slow]

IDLE_BOUND_S = 5.0


@pytest.fixture(scope="module")
def split_stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = RedisServer.shared(db=5)
    with ServiceStack(tmp_path_factory.mktemp("sweepstack"), server, step_delay=0.0, split_workers=True) as running:
        yield running


def _at(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


@pytest.mark.parametrize("parallelism", [2, 3, 4])
def test_no_trial_waits_while_the_worker_is_idle(split_stack: ServiceStack, parallelism: int) -> None:
    api = split_stack.api("a")
    body = sweep_body(split_stack, name=f"p{parallelism}", budget=6, parallelism=parallelism, pruner="none",
                      config={"epochs": 2, "batch_size": 32, "log_every": 50, "device": "cpu"})
    created = api.post("/api/sweeps/", json=body)
    assert created.status_code == 201, created.text
    sweep = wait_sweep(split_stack, created.json()["id"], lambda s: s["status"] != "running", timeout=600)
    assert sweep["status"] == "succeeded", sweep
    runs = sorted((api.get(f"/api/runs/{t['run']}/").json() for t in sweep["trials"]), key=lambda r: r["started_at"])
    waits = []
    for before, run in zip([None, *runs], runs, strict=False):
        free_from = max(_at(run["created_at"]), _at(before["finished_at"]) if before else 0.0)
        waits.append(round(_at(run["started_at"]) - free_from, 2))
    assert max(waits) <= IDLE_BOUND_S, f"idle waits per trial: {waits}\n{split_stack.logs()[-4000:]}"
    time.sleep(0.1)


@pytest.fixture(scope="module")
def two_worker_stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = RedisServer.shared(db=5)
    with ServiceStack(tmp_path_factory.mktemp("sweepstack2"), server, step_delay=0.0, split_workers=True,
                      train_workers=2) as running:
        yield running


def idle_waits(runs: list[dict[str, Any]], workers: set[str]) -> list[float]:
    """Per run, the seconds between its creation and its start during which some worker of
    `workers` was running nothing (a worker is busy from a run's start to its end)."""
    busy = {w: [(_at(r["started_at"]), _at(r["finished_at"])) for r in runs if r["worker"] == w] for w in workers}
    waits = []
    for run in runs:
        start, end = _at(run["created_at"]), _at(run["started_at"])
        # The moments where a worker's state changes cut [start, end] into pieces; a piece counts
        # when, at its middle, some worker is free.
        cuts = sorted({start, end, *(t for spans in busy.values() for span in spans for t in span if start < t < end)})
        idle = 0.0
        for a, b in zip(cuts, cuts[1:], strict=False):
            mid = (a + b) / 2
            if any(not any(s <= mid < e for s, e in spans) for spans in busy.values()):
                idle += b - a
        waits.append(round(idle, 2))
    return waits


def test_idle_wait_measures_only_time_with_a_free_worker() -> None:
    def run(worker: str, created: float, started: float, finished: float) -> dict[str, Any]:
        iso = lambda t: datetime.fromtimestamp(t).astimezone().isoformat()  # noqa: E731
        return {"worker": worker, "created_at": iso(created), "started_at": iso(started), "finished_at": iso(finished)}

    runs = [run("a", 0, 0, 10), run("b", 0, 1, 10), run("a", 0, 10, 20), run("b", 2, 15, 20)]
    # The third waited while both were busy (1..10): no idle wait; it would have from 0 to 1 (b free).
    # The fourth was created at 2 and started at 15: b was free from 10 to 15.
    assert idle_waits(runs, {"a", "b"}) == [0.0, 1.0, 1.0, 5.0]


@pytest.mark.parametrize("parallelism", [2, 3, 4])
def test_two_workers_share_the_trials_and_none_waits_while_one_is_idle(
    two_worker_stack: ServiceStack, parallelism: int
) -> None:
    api = two_worker_stack.api("a")
    body = sweep_body(two_worker_stack, name=f"two-p{parallelism}", budget=6, parallelism=parallelism,
                      pruner="none", config={"epochs": 2, "batch_size": 32, "log_every": 50, "device": "cpu"})
    created = api.post("/api/sweeps/", json=body)
    assert created.status_code == 201, created.text
    sweep = wait_sweep(two_worker_stack, created.json()["id"], lambda s: s["status"] != "running", timeout=600)
    assert sweep["status"] == "succeeded", sweep
    runs = [api.get(f"/api/runs/{t['run']}/").json() for t in sweep["trials"]]
    workers = {r["worker"] for r in runs}
    assert len(workers) == 2, f"trials ran on {workers}, not on both training workers"
    waits = idle_waits(runs, workers)
    assert max(waits) <= IDLE_BOUND_S, f"idle waits per trial: {waits}\n{two_worker_stack.logs()[-4000:]}"
