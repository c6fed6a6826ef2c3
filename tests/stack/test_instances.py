"""No job waits behind another, and two Netloom instances share one Redis without meeting (issue 12).

- With a training worker (`-Q train`), a short-job worker (`-Q short`) and a dataset worker
  (`-Q datasets`), as `make run` and docker-compose start them, ten explanations asked for
  together with a long run are ready while that run is still running (issue 13's "two workers on
  two queues"), and one team's explanation is answered while another team's large image archive
  is still being checked.
- Two stacks on the same Redis database, each with its own NETLOOM_INSTANCE prefix: a run created
  in stack 1 is trained by stack 1's worker only (stack 2's queued run, with the same id, stays
  queued with its message waiting in its own queue), and stack 2's stream of its run with that
  same id never carries stack 1's events (the group `run.1` of one is not the other's).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.stack.stack import E2E_STEP_DELAY, RedisServer, ServiceStack
from tests.stack.test_run_e2e import TIMEOUT, read_until, wait_status, ws_headers

pytestmark = pytest.mark.slow


def _shared_redis() -> RedisServer:
    import redis

    try:
        redis.Redis.from_url("redis://127.0.0.1:6379/5", socket_timeout=2).ping()
    except redis.RedisError:
        pytest.skip("needs Redis on 127.0.0.1:6379 (two stacks share it)")
    return RedisServer.shared(db=5)


@pytest.fixture(scope="module")
def split_stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A stack with a training, a short-job and a dataset worker, as `make run` starts them; uploads
    are processed on the dataset worker, as under `make run`."""
    with ServiceStack(
        tmp_path_factory.mktemp("split"), _shared_redis(), step_delay=E2E_STEP_DELAY, split_workers=True,
        dataset_processing="celery",
    ) as running:
        yield running


def _wait_json(
    stack: ServiceStack, path: str, done: Any, timeout: float = TIMEOUT, who: str = "a"
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        answer = stack.api(who).get(path)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        if done(body):
            return body
        assert time.monotonic() < deadline, f"{path}: still {body}\n{stack.logs()}"
        time.sleep(0.1)


def test_the_training_worker_leaves_the_web_tier_a_core(split_stack: ServiceStack) -> None:
    """As under `make run`, the workers' torch threads are the cores less one (webapp/devserver.py)."""
    from webapp.devserver import cohosted_worker_threads

    log = split_stack.worker_log.read_text(errors="replace")
    assert f"torch threads {cohosted_worker_threads()}" in log, log[-2000:]


def test_ten_explanations_finish_while_a_long_run_is_still_training(split_stack: ServiceStack) -> None:
    """Two workers on two queues (issue 13): the train worker announces its devices and consumes
    only train queues, the short one only `short`; ten explanations asked for together with a long
    run are all answered while that run still trains on the train worker."""
    stack = split_stack
    api = stack.api("a")
    tiny = stack.create_run(epochs=1)
    assert wait_status(stack, tiny["id"], {"succeeded", "failed"})["status"] == "succeeded", stack.logs()

    workers = {w["hostname"]: w for w in api.get("/api/workers/").json()}
    trains = [w for w in workers.values() if w["trains"]]
    assert len(trains) == 1 and trains[0]["kind"] == "cpu" and "short" not in trains[0]["queues"], workers
    assert any(w["queues"] == ["short"] for w in workers.values()), workers

    long_run = stack.create_run(epochs=500)
    explanations = [
        api.post(f"/api/runs/{tiny['id']}/explanations/", {"index": i, "method": "saliency"}).json()["id"]
        for i in range(10)
    ]
    try:
        for explanation_id in explanations:
            done = _wait_json(stack, f"/api/explanations/{explanation_id}/",
                              lambda e: e["status"] in ("succeeded", "failed"))
            assert done["status"] == "succeeded", done
        still = api.get(f"/api/runs/{long_run['id']}/").json()
        assert still["status"] == "running", "the ten explanations finished while the long run still trains"
        assert 0 < still["progress"]["fraction"] < 1
        assert still["worker"] == trains[0]["hostname"] and still["device"] == "cpu"
        busy = {w["hostname"]: w for w in api.get("/api/workers/").json()}[still["worker"]]
        assert busy["current_run"] == {"id": long_run["id"], "name": ""}
    finally:
        cancelled = api.post(f"/api/runs/{long_run['id']}/cancel/")
        assert cancelled.status_code in (200, 202), cancelled.text
    assert wait_status(stack, long_run["id"], {"cancelled", "succeeded"})["status"] == "cancelled"


def _slow_archive(images: int = 30) -> bytes:
    """Two classes of 4096 x 4096 PNGs: within every limit (0.5 Gpixel, 0.5 MB), and seconds of
    decoding each on a shared core (the campaign's 300 of them held a worker for 163 s)."""
    import io
    import zipfile

    from PIL import Image

    picture = io.BytesIO()
    Image.new("L", (4096, 4096), 128).save(picture, format="PNG")
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(images):
            zf.writestr(f"{'ab'[i % 2]}/{i}.png", picture.getvalue())
    return archive.getvalue()


def _explain(stack: ServiceStack, run_id: int, index: int) -> tuple[float, float]:
    """Team B asks for an explanation of its run: (seconds until it succeeded, seconds its job
    waited in the queue before a worker started it, by the job's own record)."""
    from datetime import datetime

    api = stack.api("b")
    asked = time.monotonic()
    answer = api.post(f"/api/runs/{run_id}/explanations/", {"index": index, "method": "saliency"})
    assert answer.status_code in (201, 202), answer.text
    done = _wait_json(stack, f"/api/explanations/{answer.json()['id']}/",
                      lambda e: e["status"] in ("succeeded", "failed"), who="b")
    took = time.monotonic() - asked
    assert done["status"] == "succeeded", done
    jobs = api.get(f"/api/jobs/?team={stack.world['b']['team']}&kind=runs.explain").json()
    [job] = [j for j in (jobs["results"] if isinstance(jobs, dict) else jobs) if j["subject_id"] == done["id"]]
    queued = datetime.fromisoformat(job["started_at"]) - datetime.fromisoformat(job["created_at"])
    return took, queued.total_seconds()


def test_another_teams_explanation_is_answered_while_an_archive_is_checked(
    split_stack: ServiceStack,
) -> None:
    """Uploads have a queue and a worker of their own: team A's large archive, still being
    checked, never holds team B's explanation (which waited 66 s behind one on the short queue)."""
    stack = split_stack
    api_a = stack.api("a")
    workers = api_a.get("/api/workers/").json()
    assert any(w["queues"] == ["datasets"] for w in workers), workers
    run = stack.create_run("b", epochs=1)
    # Team B's own export job (queued when its run succeeds) is done first: only A's upload is in
    # the way of B's explanation.
    finished = _wait_json(stack, f"/api/runs/{run['id']}/", lambda r: r["status"] in ("succeeded", "failed")
                          and r["exports"]["status"] in ("ready", "failed"), who="b")
    assert finished["status"] == "succeeded" and finished["exports"]["status"] == "ready", stack.logs()

    alone, _ = _explain(stack, run["id"], 1)  # the worker's first, with nothing else running

    answer = api_a.post_multipart(
        "/api/datasets/upload/", {"team": stack.world["a"]["team"], "kind": "images", "options": "{}"},
        {"file": ("big-pictures.zip", _slow_archive())},
    )
    assert answer.status_code == 202, answer.text
    dataset_path = f"/api/datasets/{answer.json()['id']}/"
    started = _wait_json(stack, dataset_path, lambda d: (d["progress"] or 0) > 0 or d["status"] != "processing")
    assert started["status"] == "processing", ("the check must still run when B asks", started)

    explained, queued = _explain(stack, run["id"], 0)
    meanwhile = api_a.get(dataset_path).json()
    print(f"\nteam B's explanation answered in {explained:.2f} s (its first, alone: {alone:.2f} s), "
          f"{queued:.2f} s of it queued, while team A's archive was at {meanwhile['progress']:.0%} "
          "of its check")
    assert meanwhile["status"] == "processing", "the explanation finished before the archive's check"

    ready = _wait_json(stack, dataset_path, lambda d: d["status"] != "processing", timeout=300)
    assert ready["status"] == "ready", ready
    assert ready["summary"]["rows"]["total"] == 30


def test_two_instances_on_one_redis_never_see_each_others_tasks_or_groups(
    split_stack: ServiceStack, tmp_path: Path
) -> None:
    import redis

    one = split_stack
    with ServiceStack(tmp_path / "two", _shared_redis(), step_delay=E2E_STEP_DELAY) as two:
        assert one.prefix != two.prefix and one.redis.url == two.redis.url
        two.stop_worker()  # stack 2's runs stay queued: only a foreign worker could take them
        assert wait_all_finished(one)
        # Stack 2's newest run gets the id stack 1's next run will have, so their group names meet.
        waiting = [two.create_run(epochs=1)]
        while waiting[-1]["id"] <= _last_run_id(one):
            waiting.append(two.create_run(epochs=1))
        waiting_run = waiting[-1]

        async def watch() -> tuple[list[dict[str, Any]], dict[str, Any]]:
            async with connect(two.ws_url(waiting_run["id"]), additional_headers=ws_headers(two, "a")) as ws:
                replay = await read_until(ws, lambda f: f.get("type") == "replayed")
                trained = await asyncio.to_thread(one.create_run, epochs=1)
                assert trained["id"] == waiting_run["id"], (trained["id"], waiting_run["id"])
                final = await asyncio.to_thread(wait_status, one, trained["id"], {"succeeded", "failed"})
                late: list[dict[str, Any]] = []
                try:
                    while True:  # whatever stack 2's stream sent meanwhile (nothing, when apart)
                        late.append(json.loads(await asyncio.wait_for(ws.recv(), 1.0)))
                except TimeoutError:
                    pass
                return replay + late, final

        frames, final = asyncio.run(watch())
        assert final["status"] == "succeeded", one.logs()
        assert [f["type"] for f in frames] == ["state", "status", "replayed"], frames
        assert frames[1]["status"] == "queued"
        for run in waiting:
            mine = two.api("a").get(f"/api/runs/{run['id']}/").json()
            assert mine["status"] == "queued" and mine["attempts"] == 0, mine
        client = redis.Redis.from_url(two.redis.url, socket_timeout=5)
        # device "cpu", one process: the tokens wait on train.cpu.1 (webapp/queues.py), in stack 2's keys.
        assert client.llen(f"{two.prefix}:train.cpu.1") == len(waiting), "stack 2's messages wait in its own queue"


def _last_run_id(stack: ServiceStack) -> int:
    """The newest run id of the stack, whichever team's (other tests here run team B's too)."""
    ids = [0]
    for who in ("a", "b"):
        runs = stack.api(who).get("/api/runs/").json()
        ids += [r["id"] for r in (runs["results"] if isinstance(runs, dict) else runs)]
    return max(ids)


def wait_all_finished(stack: ServiceStack) -> bool:
    runs = stack.api("a").get("/api/runs/").json()
    items = runs["results"] if isinstance(runs, dict) else runs
    for run in items:
        if run["status"] not in ("succeeded", "failed", "cancelled"):
            wait_status(stack, run["id"], {"succeeded", "failed", "cancelled"})
    return True
