"""Runs end to end with real parts: REST on daphne, a Celery worker process, Redis, WebSockets.

One stack (the session's `stack` fixture, tests/stack/conftest.py) serves the module; the
Redis-restart test has its own with a private redis-server. Every training step sleeps RUNS_STEP_DELAY_SECONDS so a test can act
while a run is mid-way; nothing asserts on wall time.
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
from websockets.exceptions import ConnectionClosed

from tests.stack.stack import E2E_STEP_DELAY, RedisServer, ServiceStack

# The stack's database follows the suite's: SQLite by default, PostgreSQL in the DATABASE_URL pass.
pytestmark = [pytest.mark.slow]

TERMINAL = {"succeeded", "failed", "cancelled"}
STEP_DELAY = E2E_STEP_DELAY
TIMEOUT = 90.0


# --- helpers ------------------------------------------------------------------------------------


async def read_until(ws: Any, done: Any, timeout: float = TIMEOUT) -> list[dict[str, Any]]:
    """Frames until `done(frame)` is true (that frame included)."""
    frames: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"stream did not finish in {timeout}s; last frames: {frames[-5:]}")
        frame = json.loads(await asyncio.wait_for(ws.recv(), remaining))
        frames.append(frame)
        if done(frame):
            return frames


def finished(frame: dict[str, Any]) -> bool:
    return frame.get("type") == "status" and frame.get("status") in TERMINAL


def metric_points(frames: list[dict[str, Any]]) -> list[tuple[str, int, float | None]]:
    """Every (key, step, value) the stream carried, in arrival order."""
    return [(k, f["step"], v) for f in frames if f.get("type") == "metric" for k, v in f["values"].items()]


def stored_points(stack: ServiceStack, run_id: int) -> dict[tuple[str, int], float | None]:
    """The stored series as the metrics API gives them (no downsampling)."""
    answer = stack.api("a").get(f"/api/runs/{run_id}/metrics/")
    assert answer.status_code == 200, answer.text
    points = {}
    for key, series in answer.json()["series"].items():
        for step, value in zip(series["step"], series["value"], strict=True):
            points[(key, step)] = value
    return points


def wait_status(stack: ServiceStack, run_id: int, statuses: set[str], timeout: float = TIMEOUT) -> dict[str, Any]:
    """Poll the run over REST until its status is one of `statuses`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = stack.api("a").get(f"/api/runs/{run_id}/").json()
        if run["status"] in statuses:
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} still {run['status']} after {timeout}s\n{stack.logs()}")


def ws_headers(stack: ServiceStack, who: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {stack.token(who)}"} if who else {}


# --- the tests ----------------------------------------------------------------------------------


def test_run_streams_every_point_once_and_the_export_reproduces_the_service(stack: ServiceStack) -> None:
    import torch
    from safetensors.torch import load_file

    from engine.data import load_dataset

    run = stack.create_run(epochs=3)
    assert run["status"] == "queued" and run["config"]["epochs"] == 3
    assert run["config"]["optimizer"]["name"] == "adam"  # engine defaults filled in

    async def watch() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        async with connect(stack.ws_url(run["id"]), additional_headers=ws_headers(stack, "a")) as ws:
            frames = await read_until(ws, finished)
            # The explanation is announced on the same stream.
            created = await asyncio.to_thread(
                stack.api("a").post, f"/api/runs/{run['id']}/explanations/", {"index": 0, "method": "saliency"}
            )
            assert created.status_code == 202, created.text
            explanation_id = created.json()["id"]
            await read_until(ws, lambda f: f.get("type") == "explanation" and f["id"] == explanation_id
                             and f["status"] in ("succeeded", "failed"))
            return frames, created.json()

    frames, created = asyncio.run(watch())
    assert frames[0]["type"] == "state" and frames[0]["run"]["id"] == run["id"]
    statuses = [f["status"] for f in frames if f.get("type") == "status"]
    assert statuses == ["queued", "running", "succeeded"], statuses
    seqs = [f["seq"] for f in frames if "run" in f and f.get("type") != "state"]
    assert seqs == list(range(1, len(seqs) + 1)), "events arrive once each, in order, without gaps"

    streamed = metric_points(frames)
    counts = Counter((k, s) for k, s, _ in streamed)
    assert max(counts.values()) == 1, "no point arrives twice"
    stored = stored_points(stack, run["id"])
    assert {(k, s): v for k, s, v in streamed} == stored
    detail = stack.api("a").get(f"/api/runs/{run['id']}/").json()
    assert sorted(s for k, s in stored if k == "train/loss") == list(range(1, detail["progress"]["total_steps"] + 1))
    assert detail["progress"]["fraction"] == 1.0 and detail["final_metrics"]["test/accuracy"] is not None

    # Downloads: safetensors weights and the generated source, loaded in plain PyTorch.
    api = stack.api("a")
    weights = api.get(f"/api/runs/{run['id']}/export/?format=safetensors")
    assert weights.status_code == 200, weights.text
    assert f'filename="Iris-MLP-A-run{run["id"]}.safetensors"' in weights.headers["Content-Disposition"]
    source = api.get(f"/api/runs/{run['id']}/export/?format=python")
    # The source downloads under a name of its run that still imports (`from Iris_MLP_A_run<id> import Net`).
    assert source.status_code == 200
    assert source.headers["Content-Disposition"].endswith(f'filename="Iris_MLP_A_run{run["id"]}.py"')
    folder = stack.tmp / "download"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(weights.content)
    namespace: dict[str, Any] = {}
    exec(compile(source.text, "model.py", "exec"), namespace)  # the user's own model file
    model = namespace["Net"]()
    model.load_state_dict(load_file(str(folder / "model.safetensors")))
    model.eval()

    explanation = api.get(f"/api/explanations/{created['id']}/").json()
    assert explanation["status"] == "succeeded", explanation
    splits = load_dataset(detail["recipe"])
    with torch.no_grad():
        logits = model(splits.test.x[:1])[0]
    assert int(logits.argmax()) == explanation["result"]["prediction"]
    assert torch.allclose(logits, torch.tensor(explanation["result"]["output"]), atol=1e-5)
    image = api.get(f"/api/explanations/{created['id']}/image/")
    assert image.status_code == 200 and image.content.startswith(b"\x89PNG")

    checkpoints = api.get(f"/api/runs/{run['id']}/checkpoints/").json()
    assert checkpoints[-1]["step"] == detail["progress"]["total_steps"] and checkpoints[-1]["available"]
    # The export task ran before the explanation (same short queue): ONNX and the zip are there.
    onnx = api.get(f"/api/runs/{run['id']}/export/?format=onnx")
    assert onnx.status_code == 200, onnx.text
    import io
    import zipfile

    bundle = api.get(f"/api/runs/{run['id']}/export/?format=zip")
    assert bundle.status_code == 200 and bundle.headers["Content-Type"] == "application/zip"
    assert {"model.safetensors", "model.py", "model.onnx"} <= set(zipfile.ZipFile(io.BytesIO(bundle.content)).namelist())
    downsampled = api.get(f"/api/runs/{run['id']}/metrics/?keys=train/loss&max_points=6").json()["series"]
    assert list(downsampled) == ["train/loss"] and len(downsampled["train/loss"]["step"]) <= 6
    assert downsampled["train/loss"]["step"][0] == 1
    assert downsampled["train/loss"]["step"][-1] == detail["progress"]["total_steps"]


def test_reconnecting_with_since_misses_nothing_and_repeats_nothing(stack: ServiceStack) -> None:
    run = stack.create_run(epochs=4)

    async def watch_twice() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        headers = ws_headers(stack, "a")
        async with connect(stack.ws_url(run["id"]), additional_headers=headers) as ws:
            first = await read_until(ws, lambda f: f.get("type") == "metric" and f["step"] >= 5)
        last_seq = max(f["seq"] for f in first if "seq" in f and f.get("type") != "state")
        async with connect(stack.ws_url(run["id"], since=last_seq), additional_headers=headers) as ws:
            second = await read_until(ws, finished)
        return first, second

    first, second = asyncio.run(watch_twice())
    assert second[0]["type"] == "state"
    received = metric_points(first) + metric_points(second)
    counts = Counter((k, s) for k, s, _ in received)
    assert max(counts.values()) == 1
    assert {(k, s): v for k, s, v in received} == stored_points(stack, run["id"])
    seqs = [f["seq"] for f in first + second if f.get("type") not in ("state", "replayed")]
    assert seqs == sorted(set(seqs))


def test_cancel_stops_training_within_one_step(stack: ServiceStack) -> None:
    run = stack.create_run(epochs=40)

    async def watch() -> list[dict[str, Any]]:
        async with connect(stack.ws_url(run["id"]), additional_headers=ws_headers(stack, "a")) as ws:
            frames = await read_until(ws, lambda f: f.get("type") == "metric" and f["step"] >= 5)
            answer = await asyncio.to_thread(stack.api("a").post, f"/api/runs/{run['id']}/cancel/")
            assert answer.status_code == 202, answer.text
            assert answer.json()["cancel_requested"] is True
            return frames + await read_until(ws, finished)

    frames = asyncio.run(watch())
    final = frames[-1]
    assert final["status"] == "cancelled"
    observed = final["cancel_observed_step"]
    assert observed is not None and final["step"] - observed <= 1, final
    logs = [f["message"] for f in frames if f.get("type") == "log"]
    assert any("cancel observed by the worker" in m for m in logs), logs
    detail = stack.api("a").get(f"/api/runs/{run['id']}/").json()
    assert detail["status"] == "cancelled" and detail["progress"]["step"] == final["step"]
    assert detail["progress"]["step"] < detail["progress"]["total_steps"]
    checkpoints = stack.api("a").get(f"/api/runs/{run['id']}/checkpoints/").json()
    assert checkpoints[-1]["step"] == final["step"] and checkpoints[-1]["available"], "the last checkpoint is kept"
    # Cancelling again is refused: the run has finished.
    assert stack.api("a").post(f"/api/runs/{run['id']}/cancel/").status_code == 409


def test_two_teams_cannot_see_stream_cancel_explain_or_download_each_others_runs(stack: ServiceStack) -> None:
    run = stack.create_run(epochs=1)
    wait_status(stack, run["id"], TERMINAL)
    rid = run["id"]
    b, anon, viewer = stack.api("b"), stack.api(None), stack.api("viewer_a")
    for path in (f"/api/runs/{rid}/", f"/api/runs/{rid}/metrics/", f"/api/runs/{rid}/checkpoints/",
                 f"/api/runs/{rid}/explanations/", f"/api/runs/{rid}/export/?format=safetensors"):
        assert b.get(path).status_code == 404, path
        assert anon.get(path).status_code == 401, path
        assert viewer.get(path).status_code == 200, path
    assert rid not in [r["id"] for r in b.get("/api/runs/").json()["results"]]
    assert b.post(f"/api/runs/{rid}/cancel/").status_code == 404
    assert b.post(f"/api/runs/{rid}/explanations/", {"index": 0, "method": "saliency"}).status_code == 404
    assert anon.post(f"/api/runs/{rid}/cancel/").status_code == 401
    assert viewer.post(f"/api/runs/{rid}/cancel/").status_code == 403
    assert viewer.post(f"/api/runs/{rid}/explanations/", {"index": 0, "method": "saliency"}).status_code == 403
    mine = stack.world["a"]
    body = {"graph": mine["graph"], "revision": 1, "dataset": mine["dataset"], "config": {"epochs": 1}}
    assert viewer.post("/api/runs/", body).status_code == 403
    # B may not train A's graph on B's data either.
    body_b = {**body, "dataset": stack.world["b"]["dataset"]}
    assert b.post("/api/runs/", body_b).status_code == 400

    async def close_code(who: str | None, run_id: int) -> int:
        async with connect(stack.ws_url(run_id), additional_headers=ws_headers(stack, who)) as ws:
            try:
                frame = await asyncio.wait_for(ws.recv(), 10)
            except ConnectionClosed as closed:
                return closed.rcvd.code if closed.rcvd else -1
            raise AssertionError(f"the stream sent {frame!r}")

    assert asyncio.run(close_code("b", rid)) == 4404
    assert asyncio.run(close_code(None, rid)) == 4401
    assert asyncio.run(close_code("a", 10**9)) == 4404


def test_a_killed_worker_leaves_the_run_interrupted_and_a_new_one_resumes_it(stack: ServiceStack) -> None:
    run = stack.create_run(epochs=10)

    async def watch() -> list[dict[str, Any]]:
        async with connect(stack.ws_url(run["id"]), additional_headers=ws_headers(stack, "a")) as ws:
            frames = await read_until(ws, lambda f: f.get("type") == "checkpoint" and f["epoch"] >= 2)
            await asyncio.to_thread(stack.kill_worker)
            await asyncio.to_thread(stack.start_worker)
            return frames + await read_until(ws, finished)

    frames = asyncio.run(watch())
    statuses = [f["status"] for f in frames if f.get("type") == "status"]
    assert statuses[-1] == "succeeded", stack.logs()
    assert "interrupted" in statuses and statuses.count("running") == 2, statuses
    resumed = [f for f in frames if f.get("type") == "log" and "resumed from the checkpoint" in f["message"]]
    assert len(resumed) == 1
    resumed_at = resumed[0]["step"]
    assert resumed_at >= 14  # at least the epoch-2 checkpoint (7 steps an epoch)

    detail = stack.api("a").get(f"/api/runs/{run['id']}/").json()
    assert detail["attempts"] == 2
    stored = stored_points(stack, run["id"])
    total = detail["progress"]["total_steps"]
    assert sorted(s for k, s in stored if k == "train/loss") == list(range(1, total + 1)), "no gap, no duplicate"
    # Only redone steps (after the checkpoint it resumed from) may have been streamed twice.
    counts = Counter((k, s) for k, s, _ in metric_points(frames))
    assert all(step > resumed_at for (key, step), n in counts.items() if n > 1)
    assert {(k, s): v for k, s, v in metric_points(frames)} == stored  # the later value wins


@pytest.mark.skipif(not RedisServer.available(), reason="needs a redis-server binary for a private Redis")
@pytest.mark.one_database
def test_training_goes_on_while_redis_restarts(tmp_path: Path) -> None:
    redis_server = RedisServer.private(tmp_path / "redis")
    with ServiceStack(tmp_path / "stack", redis_server, step_delay=STEP_DELAY) as stack:
        run = stack.create_run(epochs=10)
        deadline = time.monotonic() + TIMEOUT
        while stack.api("a").get(f"/api/runs/{run['id']}/").json()["progress"]["step"] < 10:
            assert time.monotonic() < deadline, stack.logs()
            time.sleep(0.1)
        redis_server.stop()
        time.sleep(1.5)  # training goes on meanwhile (the run keeps its lease through the DB)
        mid = stack.api("a").get(f"/api/runs/{run['id']}/").json()
        redis_server.start()
        detail = wait_status(stack, run["id"], TERMINAL)
        assert detail["status"] == "succeeded", stack.logs()
        assert detail["attempts"] == 1, "the run was never interrupted"
        assert mid["status"] == "running"
        total = detail["progress"]["total_steps"]
        stored = stored_points(stack, run["id"])
        assert sorted(s for k, s in stored if k == "train/loss") == list(range(1, total + 1))

        async def replay() -> list[dict[str, Any]]:
            async with connect(stack.ws_url(run["id"]), additional_headers=ws_headers(stack, "a")) as ws:
                return await read_until(ws, lambda f: f.get("type") == "replayed")

        assert {(k, s): v for k, s, v in metric_points(asyncio.run(replay()))} == stored
