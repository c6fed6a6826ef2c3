"""The runs table shows only what really differs (an imported run's missing config is not a
difference) and the graph parameters that differ between revisions as columns; the workers page
lists the worker, what it trains and the team's queue, whose priority is edited in place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from safetensors.torch import save_file

from engine.build import build

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, sign_in, tid
from .test_judge import Api, mlp, wait_succeeded

pytestmark = pytest.mark.e2e


def test_runs_table_and_workers_page(
    page: Page, netloom_server: LiveServer, new_account: Account, celery_worker: Path, tmp_path: Path
) -> None:
    steps = Steps(page, ARTIFACTS / "runs-table-workers")
    page.set_viewport_size({"width": 1400, "height": 800})
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])
    iris = api.post("/api/datasets/", {"team": team, "builtin": "iris"})["id"]
    narrow = mlp(4, 3)
    graph = api.post("/api/graphs/", {"team": team, "name": "iris widths", "spec": narrow})["id"]
    wide = mlp(4, 3)
    wide["nodes"][0]["params"]["out_features"] = 32
    api.post(f"/api/graphs/{graph}/revisions/", {"spec": wide, "base": 1})

    # Weights trained elsewhere, imported on revision 1: a run without a config.
    weights = tmp_path / "narrow.safetensors"
    save_file({k: v.contiguous() for k, v in build(narrow).state_dict().items()}, str(weights))
    api.post(
        f"/api/graphs/{graph}/revisions/1/weights/",
        multipart={"file": {"name": weights.name, "mimeType": "application/octet-stream",
                            "buffer": weights.read_bytes()}},
    )  # fmt: skip
    runs = [
        api.post("/api/runs/", {"graph": graph, "revision": n, "dataset": iris,
                                "config": {"epochs": 2, "optimizer": {"lr": lr}}})["id"]
        for n, lr in ((1, 0.01), (2, 0.001))
    ]  # fmt: skip
    for run in runs:
        wait_succeeded(api, run)

    # --- the table: one config column (lr), one graph column (fc1's width) -------------------------
    page.click(tid("nav-runs"))
    table = page.locator(tid("run-list"))
    expect(table.locator("tbody tr")).to_have_count(3)
    expect(page.locator(tid("group-graph"))).to_have_text("Graph (differs)")
    config_headers = table.locator("thead tr:last-child th.group-config")
    expect(config_headers).to_have_count(1)
    expect(config_headers).to_have_text("optimizer.lr")
    graph_headers = table.locator("thead tr:last-child th.group-graph")
    expect(graph_headers).to_have_text(["nodes.fc1.out_features"])
    cell = "cell-graph:nodes.fc1.out_features"
    expect(page.locator(f"{tid(f'run-row-{runs[0]}')} {tid(cell)}")).to_have_text("16")
    expect(page.locator(f"{tid(f'run-row-{runs[1]}')} {tid(cell)}")).to_have_text("32")
    steps.shot("runs-table-differing-columns")

    # --- the workers page: the worker trains a long run, two wait; priority moves one up ----------
    long_config = {"epochs": 400, "optimizer": {"lr": 0.01}}
    busy = api.post("/api/runs/", {"graph": graph, "dataset": iris, "config": long_config})["id"]
    first, second = (
        api.post("/api/runs/", {"graph": graph, "dataset": iris, "name": name, "config": long_config})["id"]
        for name in ("first waiting", "second waiting")
    )
    try:
        page.click(tid("nav-workers"))
        expect(page.locator(tid("workers-page"))).to_be_visible()
        worker = page.locator(tid("worker-row")).filter(has_text=re.compile("training run"))
        expect(worker.locator(tid("worker-doing"))).to_contain_text(f"training run {busy}", timeout=60_000)
        expect(worker.locator(tid("worker-devices"))).to_contain_text("cpu")
        queue = page.locator(f"{tid('queue-table')} tbody tr")
        expect(queue).to_have_count(2)
        expect(queue.nth(0)).to_contain_text("first waiting")
        expect(queue.nth(1)).to_contain_text("second waiting")
        steps.shot("workers-and-queue")

        page.fill(tid(f"priority-{second}"), "5")
        page.click(tid(f"priority-save-{second}"))
        expect(queue.nth(0)).to_contain_text("second waiting")
        expect(page.locator(tid(f"priority-{second}"))).to_have_value("5")
        page.fill(tid(f"priority-{first}"), "50")
        page.click(tid(f"priority-save-{first}"))
        expect(page.locator(tid(f"priority-error-{first}"))).to_contain_text("10")
        steps.shot("priority-raised")

        # The run page of a queued run edits it too.
        page.goto(f"{netloom_server.url}/app/runs/{first}")
        expect(page.locator(tid(f"priority-{first}"))).to_have_value("0")
        page.fill(tid(f"priority-{first}"), "7")
        page.click(tid(f"priority-save-{first}"))
        expect(page.locator(tid(f"priority-save-{first}"))).to_be_disabled()
        assert api.get(f"/api/runs/{first}/")["priority"] == 7
        steps.shot("run-page-priority")
    finally:
        for run in (first, second, busy):
            api.post(f"/api/runs/{run}/cancel/")
