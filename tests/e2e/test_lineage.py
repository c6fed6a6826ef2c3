"""Lineage and reproduction in the browser: a fine-tuned run's lineage page draws
dataset -> source run -> checkpoint -> fine-tuned run, each node opening its page; the run page's
Reproduce button queues a run repeating it, which says what it reproduces.

The dataset, graph and both runs are set up through the REST API and trained by the real worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, sign_in, tid
from .test_judge import Api, mlp, wait_succeeded

pytestmark = pytest.mark.e2e


def test_lineage_of_a_fine_tuned_run_and_its_reproduction(
    page: Page, netloom_server: LiveServer, new_account: Account, celery_worker: Path
) -> None:
    steps = Steps(page, ARTIFACTS / "lineage")
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])
    iris = api.post("/api/datasets/", {"team": team, "builtin": "iris"})
    graph = api.post("/api/graphs/", {"team": team, "name": "iris mlp", "spec": mlp(4, 3)})
    config = {"epochs": 2, "batch_size": 16, "device": "cpu", "seed": 5}
    source = api.post("/api/runs/", {"graph": graph["id"], "dataset": iris["id"], "name": "base", "config": config})
    wait_succeeded(api, int(source["id"]))
    tuned = api.post("/api/runs/", {
        "graph": graph["id"], "dataset": iris["id"], "name": "tuned", "config": config,
        "init": {"run": source["id"], "checkpoint": "best", "mode": "finetune"},
    })  # fmt: skip
    wait_succeeded(api, int(tuned["id"]))

    # --- the run page links to its lineage -----------------------------------------------------
    page.goto(f"{netloom_server.url}/app/runs/{tuned['id']}")
    expect(page.locator(tid("run-status"))).to_have_text("succeeded")
    page.click(tid("run-lineage"))
    expect(page).to_have_url(f"{netloom_server.url}/app/runs/{tuned['id']}/lineage")
    canvas = page.locator(tid("lineage-page"))
    dataset = canvas.locator(tid(f"lineage-node-dataset:{iris['id']}@1"))
    base = canvas.locator(tid(f"lineage-node-run:{source['id']}"))
    checkpoint = canvas.locator(tid(f"lineage-node-checkpoint:{source['id']}:best"))
    run = canvas.locator(tid(f"lineage-node-run:{tuned['id']}"))
    for node in (dataset, base, checkpoint, run):
        expect(node).to_be_visible()
    expect(dataset).to_contain_text("iris")
    expect(base).to_contain_text("base")
    expect(checkpoint).to_contain_text("best")
    expect(run).to_contain_text("tuned")
    expect(run).to_contain_text("seed 5")
    # Drawn left to right: dataset, source run, checkpoint, the fine-tuned run.
    xs = [node.bounding_box()["x"] for node in (dataset, base, checkpoint, run)]  # type: ignore[index]
    assert xs == sorted(xs) and len(set(xs)) == 4, xs
    # dataset -> base, dataset -> tuned, base -> best, best -> tuned, and tuned's own three checkpoints.
    for name in ("best", "epoch-0001", "epoch-0002"):
        expect(canvas.locator(tid(f"lineage-node-checkpoint:{tuned['id']}:{name}"))).to_be_visible()
    expect(canvas.locator(".react-flow__edge")).to_have_count(7)
    steps.shot("lineage")

    # --- a node opens its page -------------------------------------------------------------------
    base.click()
    expect(page).to_have_url(f"{netloom_server.url}/app/runs/{source['id']}")
    expect(page.locator(tid("run-status"))).to_have_text("succeeded")

    # --- Reproduce -----------------------------------------------------------------------------------
    page.click(tid("run-reproduce"))
    box = page.locator(tid("reproduce-box"))
    expect(box).to_contain_text("seed 5")
    expect(box).to_contain_text("very same weights")
    expect(box.locator(tid("reproduce-cuda-note"))).to_have_count(0)  # a CPU run
    steps.shot("reproduce")
    page.click(tid("reproduce-confirm"))
    expect(page.locator(tid("run-reproduces"))).to_contain_text(f"run #{source['id']}")
    expect(page.locator(tid("run-page"))).to_contain_text("base (reproduction)")
    steps.shot("reproduction")
