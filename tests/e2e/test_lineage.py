"""Lineage and reproduction in the browser: a fine-tuned run's lineage page draws
dataset -> source run -> checkpoint -> fine-tuned run, each node opening its page; the run page's
Reproduce button queues a run repeating it, which says what it reproduces. From the datasets page,
a version's "Lineage" link shows which runs and models used that data.

Graphs, runs and models are set up through the REST API and trained by the real worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.webapp.conftest import iris_like_csv

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


def test_which_runs_and_models_used_an_uploaded_dataset_version(
    page: Page, netloom_server: LiveServer, new_account: Account, celery_worker: Path
) -> None:
    steps = Steps(page, Path("/tmp/shots/h37"))
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])

    # --- upload a CSV on the datasets page ------------------------------------------------------
    page.click(tid("nav-datasets"))
    page.set_input_files(tid("upload-file"), {"name": "flowers.csv", "mimeType": "text/csv", "buffer": iris_like_csv(60)})
    expect(page.locator(tid("upload-target"))).to_have_value("species")
    page.click(tid("upload-submit"))
    row = page.locator(f'{tid("dataset-list")} tr[data-name="flowers"]')
    expect(row.locator(tid("dataset-status"))).to_have_text("ready")
    dataset = int((row.get_attribute("data-testid") or "").rsplit("-", 1)[1])

    # --- a run trains on it, and is registered as a model version ------------------------------------
    graph = api.post("/api/graphs/", {"team": team, "name": "flowers mlp", "spec": mlp(4, 3)})
    config = {"epochs": 2, "batch_size": 16, "device": "cpu", "seed": 3}
    run = api.post("/api/runs/", {"graph": graph["id"], "dataset": dataset, "name": "on flowers", "config": config})
    assert run["dataset_version"]["number"] == 1
    wait_succeeded(api, int(run["id"]))
    model = api.post("/api/models/", {"team": team, "name": "flower-net"})
    assert api.post(f"/api/models/{model['id']}/versions/", {"run": run["id"]})["number"] == 1

    # --- the versions panel: a second version through the same upload form, then v1's lineage ------
    page.reload()
    row.locator(tid("dataset-versions-toggle")).click()
    panel = page.locator(tid("dataset-versions"))
    expect(panel.locator(tid("version-row-1"))).to_contain_text("60")
    form = panel.locator(tid("version-upload-form"))
    form.locator(tid("upload-file")).set_input_files({"name": "flowers.csv", "mimeType": "text/csv", "buffer": iris_like_csv(45)})
    form.locator(tid("upload-submit")).click()
    expect(form.locator(tid("upload-message"))).to_have_text("Version 2 is ready.")
    expect(panel.locator(tid("version-row-2"))).to_contain_text("45")
    steps.shot("dataset-versions")

    panel.locator(tid("version-lineage-1")).click()
    expect(page).to_have_url(f"{netloom_server.url}/app/datasets/{dataset}/versions/1/lineage")
    canvas = page.locator(tid("lineage-page"))
    start = canvas.locator(tid(f"lineage-node-dataset:{dataset}@1"))
    trained = canvas.locator(tid(f"lineage-node-run:{run['id']}"))
    registered = canvas.locator('[data-kind="model_version"]')  # a version is named by its model and number
    expect(registered).to_have_count(1)
    for node in (start, trained, registered):
        expect(node).to_be_visible()
    expect(page.locator(".graph-name")).to_have_text("Lineage of flowers v1")
    expect(canvas.locator(tid("lineage-question"))).to_contain_text("Which runs and models used this data")
    expect(start).to_have_attribute("data-root", "true")  # the node it starts from is highlighted
    expect(start).to_contain_text("start")
    expect(trained).not_to_have_attribute("data-root", "true")
    expect(trained).to_contain_text("on flowers")
    expect(registered).to_contain_text("flower-net v1")
    xs = [node.bounding_box()["x"] for node in (start, trained, registered)]  # type: ignore[index]
    assert xs == sorted(xs) and len(set(xs)) == 3, xs
    steps.shot("dataset-version-lineage")

    # Version 2: no run has trained on it yet.
    page.goto(f"{netloom_server.url}/app/datasets/{dataset}/versions/2/lineage")
    expect(page.locator(tid("lineage-unused"))).to_have_text("No run has trained on this version yet.")
    expect(canvas.locator(tid(f"lineage-node-run:{run['id']}"))).to_have_count(0)
    steps.shot("unused-version-lineage")

    # A node opens its page.
    page.goto(f"{netloom_server.url}/app/datasets/{dataset}/versions/1/lineage")
    trained.click()
    expect(page).to_have_url(f"{netloom_server.url}/app/runs/{run['id']}")
