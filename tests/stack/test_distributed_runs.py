"""Runs of `processes: 2` end to end: REST on the server, a real Celery worker, two gloo ranks.

The worker stays the ranks' parent (engine.train.distributed through the elastic launcher); the
ranks' outcome files are in the run's folder (`runs/<id>/ranks/rank-N.json`). Uses the session's
stack (tests/stack/conftest.py); every step sleeps E2E_STEP_DELAY so a test can act mid-run.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.stack.stack import ServiceStack
from tests.stack.test_run_e2e import (
    TERMINAL,
    finished,
    metric_points,
    read_until,
    stored_points,
    wait_status,
    ws_headers,
)

pytestmark = [pytest.mark.slow, pytest.mark.one_database]


def rank_outcomes(stack: ServiceStack, run_id: int) -> list[dict[str, Any]]:
    """What each rank of the run's last attempt wrote when it ended."""
    folder = stack.tmp / "media" / "runs" / str(run_id) / "ranks"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("rank-*.json"))]


def export_weights(stack: ServiceStack, run_id: int) -> dict[str, Any]:
    from safetensors.torch import load

    answer = stack.api("a").get(f"/api/runs/{run_id}/export/?format=safetensors")
    assert answer.status_code == 200, answer.text
    return load(answer.content)


def ranks_alive(stack: ServiceStack, run_id: int) -> list[int]:
    """Pids of rank processes still training this run of this stack (their command line names
    its job file: another xdist worker's stack has a run with the same id)."""
    needle = str(stack.tmp / "media" / "runs" / str(run_id) / "ranks" / "job.json").encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"engine.train.distributed" in cmdline and needle in cmdline:
            pids.append(int(proc.name))
    return pids


# Each strategy the ranks may share the model by: DDP (each holds it all) and FSDP2 (each a shard).
STRATEGIES = pytest.mark.parametrize("strategy", [{}, {"strategy": "fsdp"}], ids=["ddp", "fsdp"])


@STRATEGIES
def test_a_two_process_run_trains_the_weights_of_a_one_process_run_and_reports_each_step_once(
    stack: ServiceStack, strategy: dict[str, str]
) -> None:
    import torch

    config = {"epochs": 2, "seed": 5}
    single = stack.create_run(**config)
    double = stack.create_run(**config, processes=2, **strategy)
    assert double["config"]["processes"] == 2
    assert double["config"]["strategy"] == strategy.get("strategy", "ddp")
    # Sharded, the gradients are reduce-scattered in another order than DDP's all-reduce.
    rtol = 1e-4 if strategy else 1e-5

    async def watch() -> list[dict[str, Any]]:
        async with connect(
            stack.ws_url(double["id"]), additional_headers=ws_headers(stack, "a")
        ) as ws:
            return await read_until(ws, finished)

    frames = asyncio.run(watch())
    assert frames[-1]["status"] == "succeeded", stack.logs()
    assert wait_status(stack, single["id"], TERMINAL)["status"] == "succeeded", stack.logs()

    detail = stack.api("a").get(f"/api/runs/{double['id']}/").json()
    total = detail["progress"]["total_steps"]
    assert total == 14 and detail["progress"]["step"] == total
    stored = stored_points(stack, double["id"])
    assert sorted(s for k, s in stored if k == "train/loss") == list(range(1, total + 1))
    assert max(Counter((k, s) for k, s, _ in metric_points(frames)).values()) == 1, "each step once"
    assert [(o["rank"], o["world"], o["steps"]) for o in rank_outcomes(stack, double["id"])] == [
        (0, 2, total),
        (1, 2, total),
    ]

    one, two = export_weights(stack, single["id"]), export_weights(stack, double["id"])
    assert one.keys() == two.keys()
    for name in one:
        torch.testing.assert_close(two[name], one[name], rtol=rtol, atol=rtol / 10, msg=name)
    # The losses the run page draws are the global batch's, as the 1-process run's.
    single_points = stored_points(stack, single["id"])
    for (key, step), value in stored.items():
        if key == "train/loss":
            assert value == pytest.approx(single_points[(key, step)], rel=rtol)


@STRATEGIES
def test_cancel_stops_both_ranks_at_the_step_the_run_records(stack: ServiceStack, strategy: dict[str, str]) -> None:
    run = stack.create_run(epochs=40, processes=2, **strategy)

    async def watch() -> list[dict[str, Any]]:
        async with connect(
            stack.ws_url(run["id"]), additional_headers=ws_headers(stack, "a")
        ) as ws:
            frames = await read_until(ws, lambda f: f.get("type") == "metric" and f["step"] >= 5)
            answer = await asyncio.to_thread(stack.api("a").post, f"/api/runs/{run['id']}/cancel/")
            assert answer.status_code == 202, answer.text
            return frames + await read_until(ws, finished)

    frames = asyncio.run(watch())
    final = frames[-1]
    assert final["status"] == "cancelled", stack.logs()
    observed = final["cancel_observed_step"]
    assert observed is not None and final["step"] - observed <= 1, final
    outcomes = rank_outcomes(stack, run["id"])
    assert [(o["rank"], o["status"], o["steps"]) for o in outcomes] == [
        (0, "cancelled", final["step"]),
        (1, "cancelled", final["step"]),
    ]
    checkpoints = stack.api("a").get(f"/api/runs/{run['id']}/checkpoints/").json()
    assert checkpoints[-1]["step"] == final["step"] and checkpoints[-1]["available"]


@STRATEGIES
def test_a_killed_worker_takes_its_ranks_with_it_and_a_new_worker_resumes_with_two(
    stack: ServiceStack, strategy: dict[str, str]
) -> None:
    run = stack.create_run(epochs=10, processes=2, **strategy)

    async def watch() -> list[dict[str, Any]]:
        async with connect(
            stack.ws_url(run["id"]), additional_headers=ws_headers(stack, "a")
        ) as ws:
            frames = await read_until(
                ws, lambda f: f.get("type") == "checkpoint" and f["epoch"] >= 2
            )
            assert len(ranks_alive(stack, run["id"])) == 2
            await asyncio.to_thread(stack.kill_worker)
            deadline = time.monotonic() + 30
            while ranks_alive(stack, run["id"]) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert ranks_alive(stack, run["id"]) == [], "the ranks outlived their worker"
            await asyncio.to_thread(stack.start_worker)
            return frames + await read_until(ws, finished)

    frames = asyncio.run(watch())
    statuses = [f["status"] for f in frames if f.get("type") == "status"]
    assert statuses[-1] == "succeeded", stack.logs()
    detail = stack.api("a").get(f"/api/runs/{run['id']}/").json()
    # One attempt killed with its worker, one resumed by the new worker; on a loaded machine the
    # stack's 3 s lease can lapse once more, and that attempt is resumed the same way.
    attempts = detail["attempts"]
    why = [f.get("detail") for f in frames if f.get("type") == "status" and f["status"] == "interrupted"]
    assert "interrupted" in statuses and statuses.count("running") == attempts >= 2, (statuses, why)
    resumed = [
        f
        for f in frames
        if f.get("type") == "log" and "resumed from the checkpoint" in f["message"]
    ]
    assert len(resumed) == attempts - 1 and all(f["step"] >= 14 for f in resumed), resumed
    total = detail["progress"]["total_steps"]
    stored = stored_points(stack, run["id"])
    assert sorted(s for k, s in stored if k == "train/loss") == list(range(1, total + 1)), (
        "no gap, no duplicate"
    )
    # The second attempt trained with two ranks again, from the checkpoint to the end.
    assert [(o["rank"], o["world"], o["steps"]) for o in rank_outcomes(stack, run["id"])] == [
        (0, 2, total),
        (1, 2, total),
    ]
