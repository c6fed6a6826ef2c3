"""A sweep's trials never wait while a fitting worker is idle, for any parallelism.

Split workers as under `make run` (one on the train queues, one on the short queue), SQLite.
For each trial run: how long it was queued while the training worker had nothing to do
(from max(its creation, the previous run's end) to its start). A token a worker drops shows as a
wait of a whole re-send interval (120 s), far over the bound checked here.
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
