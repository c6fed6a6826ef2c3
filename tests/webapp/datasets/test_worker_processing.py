"""Through the real stack (tests/stack/stack.py): with NETLOOM_DATASET_PROCESSING=auto (the
default) an upload goes to the running short-queue worker, shows its progress, becomes ready with
its strategies, and a run on it trains from the columnar copy."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.stack.stack import RedisServer, ServiceStack
from tests.webapp.datasets.test_csv_uploads import gappy_csv, mlp

pytestmark = [pytest.mark.slow]

TIMEOUT = 120.0


@pytest.fixture(scope="module")
def auto_stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import redis

    try:
        redis.Redis.from_url("redis://127.0.0.1:6379/5", socket_timeout=2).ping()
        server = RedisServer.shared(db=5)
    except redis.RedisError:
        if not RedisServer.available():
            pytest.skip("needs Redis on 127.0.0.1:6379 or a redis-server binary")
        server = RedisServer.private(tmp_path_factory.mktemp("redis"))
    with ServiceStack(tmp_path_factory.mktemp("stack"), server, dataset_processing="auto") as stack:
        yield stack


def _wait(stack: ServiceStack, path: str, done: Any) -> dict[str, Any]:
    deadline = time.monotonic() + TIMEOUT
    seen: dict[str, Any] = {}
    while time.monotonic() < deadline:
        answer = stack.api("a").get(path)
        assert answer.status_code == 200, answer.text
        seen = answer.json()
        if done(seen):
            return seen
        time.sleep(0.2)
    raise AssertionError(f"{path} not done after {TIMEOUT}s: {seen}\n{stack.logs()}")


def test_a_latin1_upload_is_processed_by_the_worker_and_a_run_trains_on_it(
    auto_stack: ServiceStack,
) -> None:
    stack = auto_stack
    text = gappy_csv(300).replace(",", ";").replace("lima", "münchen")
    options = {"target": "label", "features": ["age", "income", "city"]}
    upload = stack.api("a").post_multipart(
        "/api/datasets/upload/",
        {"team": stack.world["a"]["team"], "kind": "csv", "options": json.dumps(options)},
        {"file": ("customers.csv", text.encode("latin-1"))},
    )
    assert upload.status_code == 202, upload.text  # a worker answered: processed there
    dataset = _wait(
        stack, f"/api/datasets/{upload.json()['id']}/", lambda d: d["status"] != "processing"
    )
    assert dataset["status"] == "ready", dataset["error"]
    assert dataset["progress"] == 1.0
    assert dataset["summary"]["csv"]["encoding"] == "latin-1"
    assert dataset["summary"]["missing"]["age"]["strategy"] == "median"
    assert "city=münchen" in dataset["summary"]["feature_names"]

    graph = stack.api("a").post(
        "/api/graphs/",
        json={
            "team": stack.world["a"]["team"],
            "name": "customers mlp",
            "spec": mlp(dataset["summary"]["feature_shape"][0], 2),
        },
    )
    assert graph.status_code == 201, graph.text
    run = stack.api("a").post(
        "/api/runs/",
        json={"graph": graph.json()["id"], "dataset": dataset["id"],
              "config": {"epochs": 1, "batch_size": 32, "device": "cpu"}},
    )  # fmt: skip
    assert run.status_code == 201, run.text
    done = _wait(
        stack,
        f"/api/runs/{run.json()['id']}/",
        lambda r: r["status"] in ("succeeded", "failed", "cancelled"),
    )
    assert done["status"] == "succeeded", done.get("error")
