"""Two workers on two queues, as `make run` and docker-compose start them: a long training run
never holds back short jobs.

A worker on `-Q train` (it consumes the train queues its devices fit) and one on `-Q short`.
A tiny run is trained first (explanations need its checkpoint); then one long run and ten
explanations are submitted together: the ten finish while the long run is still training.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.workers.stack import RedisServer, ServiceStack

pytestmark = [pytest.mark.slow]

TIMEOUT = 120.0
TERMINAL = {"succeeded", "failed", "cancelled"}


@pytest.fixture(scope="module")
def split_stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A stack whose training worker and short-jobs worker are two processes (steps slowed a little)."""
    import redis

    try:
        redis.Redis.from_url("redis://127.0.0.1:6379/5", socket_timeout=2).ping()
        server = RedisServer.shared(db=5)
    except redis.RedisError:
        if not RedisServer.available():
            pytest.skip("needs Redis on 127.0.0.1:6379 or a redis-server binary")
        server = RedisServer.private(tmp_path_factory.mktemp("redis"))
    with ServiceStack(
        Path(tmp_path_factory.mktemp("split")), server, step_delay=0.05, split_workers=True
    ) as stack:
        yield stack


def poll(stack: ServiceStack, path: str, done: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
    """GET `path` as team A's admin until `done(body)`; the body."""
    deadline = time.monotonic() + timeout
    while True:
        body = stack.api("a").get(path).json()
        if done(body):
            return body
        assert time.monotonic() < deadline, f"{path}: {body}\n{stack.logs()}"
        time.sleep(0.2)


def test_ten_explanations_finish_while_a_long_run_is_still_training(
    split_stack: ServiceStack,
) -> None:
    stack = split_stack
    api = stack.api("a")
    tiny = stack.create_run("a", epochs=1)
    assert (
        poll(stack, f"/api/runs/{tiny['id']}/", lambda r: r["status"] in TERMINAL)["status"]
        == "succeeded"
    )

    workers = {w["hostname"]: w for w in api.get("/api/workers/").json()}
    trains = [w for w in workers.values() if w["trains"]]
    assert len(trains) == 1 and trains[0]["kind"] == "cpu" and "short" not in trains[0]["queues"], (
        workers
    )
    assert any(w["queues"] == ["short"] for w in workers.values()), workers

    long = stack.create_run("a", epochs=400)
    explanations = [
        api.post(
            f"/api/runs/{tiny['id']}/explanations/", {"index": i, "method": "saliency"}
        ).json()["id"]
        for i in range(10)
    ]
    try:
        for explanation_id in explanations:
            done = poll(
                stack,
                f"/api/explanations/{explanation_id}/",
                lambda e: e["status"] in ("succeeded", "failed"),
            )
            assert done["status"] == "succeeded", done
        run = api.get(f"/api/runs/{long['id']}/").json()
        assert run["status"] == "running", (
            "the ten explanations finished while the long run still trains"
        )
        assert run["worker"] == trains[0]["hostname"] and run["device"] == "cpu"
        busy = {w["hostname"]: w for w in api.get("/api/workers/").json()}[run["worker"]]
        assert busy["current_run"] == {"id": long["id"], "name": ""}
    finally:
        api.post(f"/api/runs/{long['id']}/cancel/")
    assert (
        poll(stack, f"/api/runs/{long['id']}/", lambda r: r["status"] in TERMINAL)["status"]
        == "cancelled"
    )
