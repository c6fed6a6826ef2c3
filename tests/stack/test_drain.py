"""A training worker told to stop (SIGTERM: a Kubernetes scale-down or node drain, `docker compose
stop`) does not hold its shutdown for the rest of the run: the run stops within a step,
checkpoints, is queued again with its attempt refunded, and the next worker resumes it from that
step to the end. Real processes: the web server, a Celery worker, Redis, a SQLite file.
"""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.stack.stack import E2E_STEP_DELAY, RedisServer, ServiceStack
from tests.stack.test_run_e2e import finished, read_until, wait_status

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def drain_stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = RedisServer.for_tests(lambda: tmp_path_factory.mktemp("redis"))
    with ServiceStack(tmp_path_factory.mktemp("drain"), server, step_delay=E2E_STEP_DELAY) as running:
        yield running


def wait_step(stack: ServiceStack, run_id: int, step: int, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = stack.api("a").get(f"/api/runs/{run_id}/").json()
        if run["status"] == "running" and (run["progress"] or {}).get("step", 0) >= step:
            return run
        assert run["status"] in ("queued", "running"), f"{run['status']}\n{stack.logs()}"
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} never reached step {step}\n{stack.logs()}")


def test_a_stopped_worker_checkpoints_its_run_and_the_next_worker_resumes_it(drain_stack: ServiceStack) -> None:
    stack = drain_stack
    api = stack.api("a")
    run = stack.create_run(epochs=40)  # ~320 steps at the step delay: far longer than a drain
    running = wait_step(stack, run["id"], 20)
    attempts = running["attempts"]
    total = running["progress"]["total_steps"]

    assert stack.worker is not None
    started = time.monotonic()
    stack.worker.send_signal(signal.SIGTERM)
    stack.worker.wait(60)
    stopped_in = time.monotonic() - started

    queued = api.get(f"/api/runs/{run['id']}/").json()
    assert queued["status"] == "queued", f"{queued['status']}: {queued.get('detail')}\n{stack.logs()}"
    at = queued["progress"]["step"]
    assert 20 <= at < total, (at, total)
    # The worker left well before the run's end would have come (the remaining steps' delay alone).
    assert stopped_in < (total - at) * E2E_STEP_DELAY, (stopped_in, total - at)
    assert queued["attempts"] == attempts - 1, "a drain is not one of the run's attempts"
    checkpoints = api.get(f"/api/runs/{run['id']}/checkpoints/").json()
    assert at in {c["step"] for c in checkpoints}, (at, checkpoints)

    stack.start_worker()
    done = wait_status(stack, run["id"], {"succeeded", "failed", "cancelled"}, timeout=180)
    assert done["status"] == "succeeded", f"{done.get('error')}\n{stack.logs()}"
    assert done["progress"]["step"] == total
    # The stream, replayed from its start, says so: where the worker stopped and where the next went on.
    frames = replay(stack, run["id"])
    requeued = [f for f in frames if f.get("type") == "status" and f["status"] == "queued" and f.get("detail")]
    assert any(f"shut down at step {at}" in f["detail"] for f in requeued), requeued
    messages = [frame["message"] for frame in frames if frame.get("type") == "log"]
    assert any("shutting down" in m for m in messages), messages
    assert f"resumed from the checkpoint at step {at}" in messages, messages


def replay(stack: ServiceStack, run_id: int) -> list[dict[str, Any]]:
    async def read() -> list[dict[str, Any]]:
        headers = {"Authorization": f"Bearer {stack.token('a')}"}
        async with connect(stack.ws_url(run_id, since=0), additional_headers=headers) as ws:
            return await read_until(ws, finished)

    return asyncio.run(read())
