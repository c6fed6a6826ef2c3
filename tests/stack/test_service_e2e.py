"""The service with real parts around the worker: uploads checked on the "datasets" queue, and a
queued run whose broker message was lost, sent again by the reaper and trained.

Uses the session's stack (tests/stack/conftest.py), which processes uploads the way `make run`
does (NETLOOM_DATASET_PROCESSING=celery) and re-sends queued runs after a few seconds.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.stack.stack import ServiceStack
from tests.webapp.conftest import iris_like_csv

pytestmark = [pytest.mark.slow]

TIMEOUT = 60.0


def wait_dataset(stack: ServiceStack, dataset_id: int) -> dict[str, Any]:
    """Poll GET /api/datasets/<id>/ until the dataset is no longer processing."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        answer = stack.api("a").get(f"/api/datasets/{dataset_id}/")
        assert answer.status_code == 200, answer.text
        if answer.json()["status"] != "processing":
            return answer.json()
        time.sleep(0.1)
    raise AssertionError(f"dataset {dataset_id} still processing after {TIMEOUT}s\n{stack.logs()}")


def upload_csv(stack: ServiceStack, content: bytes, filename: str) -> Any:
    """POST /api/datasets/upload/ as team A's admin, the way the browser does (multipart)."""
    return stack.api("a").post_multipart(
        "/api/datasets/upload/",
        {"team": stack.world["a"]["team"], "kind": "csv", "options": json.dumps({"target": "species"})},
        {"file": (filename, content)},
    )


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_an_upload_is_checked_by_the_worker_and_a_bad_csv_fails_naming_row_and_column(stack: ServiceStack) -> None:
    media = stack.tmp / "media"

    good = upload_csv(stack, iris_like_csv(30), "flowers.csv")
    assert good.status_code == 202, good.text
    assert good.json()["status"] == "processing" and good.json()["summary"] == {}
    ready = wait_dataset(stack, good.json()["id"])
    assert ready["status"] == "ready", ready
    assert ready["summary"]["rows"]["total"] == 30
    assert ready["summary"]["class_counts"] == {"setosa": 10, "versicolor": 10, "virginica": 10}
    # The upload, and the columnar table it was parsed into once (what runs read).
    assert [p.name for p in files_under(media / "datasets" / str(ready["id"]))] == ["data.csv", "table.arrow"]
    preview = stack.api("a").get(f"/api/datasets/{ready['id']}/preview/")
    assert preview.status_code == 200 and preview.json()["columns"][-1] == "species"

    bad = upload_csv(stack, iris_like_csv(30, bad_row=7), "bad.csv")
    assert bad.status_code == 202, bad.text
    assert bad.json()["status"] == "processing"
    failed = wait_dataset(stack, bad.json()["id"])
    assert failed["status"] == "failed", failed
    assert failed["error"]["row"] == 8 and failed["error"]["column"] == "sepal_width", failed["error"]
    assert "row 8" in failed["error"]["message"] and "sepal_width" in failed["error"]["message"]
    assert files_under(media / "datasets" / str(failed["id"])) == []
    assert files_under(media / "uploads") == [], "no unfinished upload is left behind"
    # Team B sees neither.
    assert stack.api("b").get(f"/api/datasets/{ready['id']}/").status_code == 404


def test_a_queued_run_whose_message_was_lost_is_sent_again_and_trains(stack: ServiceStack) -> None:
    stack.stop_worker()
    try:
        run = stack.create_run(epochs=1)
        assert run["status"] == "queued"
        # Redis restarted without persistence before any worker took the message.
        dropped = stack.drop_queued_messages()
        assert f"{stack.prefix}:train.cpu.1" in dropped, dropped  # the run's need queue (webapp/queues.py)
    finally:
        stack.start_worker()
    deadline = time.monotonic() + TIMEOUT
    while (detail := stack.api("a").get(f"/api/runs/{run['id']}/").json())["status"] not in (
        "succeeded", "failed", "cancelled"
    ):
        assert time.monotonic() < deadline, f"run still {detail['status']}\n{stack.logs()}"
        time.sleep(0.2)
    assert detail["status"] == "succeeded", stack.logs()
    # Sent again, it trained (without the re-send it would stay queued), once: the stack's only
    # worker never reaps the run it is claiming or training, however loaded the machine.
    assert detail["attempts"] == 1, stack.logs()

    async def replay() -> list[dict[str, Any]]:
        headers = {"Authorization": f"Bearer {stack.token('a')}"}
        async with connect(stack.ws_url(run["id"]), additional_headers=headers) as ws:
            frames = []
            while not frames or frames[-1].get("type") != "replayed":
                frames.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
            return frames

    frames = asyncio.run(replay())
    statuses = [f["status"] for f in frames if f.get("type") == "status"]
    assert statuses == ["queued", "running", "succeeded"], statuses
    resent = [f for f in frames if f.get("type") == "log" and "sent again" in f["message"]]
    assert resent and resent[0]["level"] == "warning", [f for f in frames if f.get("type") == "log"]
