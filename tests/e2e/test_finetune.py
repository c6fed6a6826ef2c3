"""Continuing from a checkpoint in the browser: a digits CNN run's checkpoints panel (kinds,
metrics, which one the default export holds, downloads), "Run again" filled from the run, and
"Fine-tune from this" on its best checkpoint for a second revision of the graph whose conv2 has
a larger kernel: the dialog lists, before anything is queued, that node's mismatch (and only
that node's), a frozen node is picked, and the new run starts from that checkpoint.

The dataset, graph, revisions and the first run are set up through the REST API and trained by
the real worker; the fine-tune is made in the page."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, sign_in, tid
from .test_judge import Api, wait_succeeded

pytestmark = pytest.mark.e2e

SPECS = Path(__file__).resolve().parents[2] / "examples" / "specs"


def test_user_fine_tunes_a_changed_graph_from_the_best_checkpoint(
    page: Page, netloom_server: LiveServer, new_account: Account, celery_worker: Path
) -> None:
    steps = Steps(page, ARTIFACTS / "finetune")
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])
    digits = api.post("/api/datasets/", {"team": team, "builtin": "digits"})
    spec = json.loads((SPECS / "digits_cnn.json").read_text())
    graph = api.post("/api/graphs/", {"team": team, "name": "digits cnn", "spec": spec})
    source = api.post("/api/runs/", {
        "graph": graph["id"], "dataset": digits["id"], "name": "from scratch",
        "config": {"epochs": 3, "batch_size": 64, "optimizer": {"lr": 0.01}},
    })  # fmt: skip
    wait_succeeded(api, int(source["id"]))
    # Revision 2: conv2's kernel 3 -> 5 (its weight changes shape; everything else matches).
    changed = copy.deepcopy(spec)
    conv2 = next(n for n in changed["nodes"] if n["id"] == "conv2")
    conv2["params"].update({"kernel_size": 5, "padding": 2})
    api.post(f"/api/graphs/{graph['id']}/revisions/", {"spec": changed})

    # --- the checkpoints panel ---------------------------------------------------------------------
    page.goto(f"{netloom_server.url}/app/runs/{source['id']}")
    expect(page.locator(tid("run-status"))).to_have_text("succeeded")
    panel = page.locator(tid("checkpoints-panel"))
    panel.scroll_into_view_if_needed()
    best = panel.locator('tr[data-kind="best"]')
    expect(best).to_have_count(1)
    name = (best.get_attribute("data-testid") or "").removeprefix("checkpoint-")
    # The default export holds the best checkpoint's weights.
    expect(best).to_have_attribute("data-default", "true")
    expect(best.locator(tid("checkpoint-default"))).to_be_visible()
    expect(panel.locator("thead")).to_contain_text("val/loss")
    actions = panel.locator(tid(f"checkpoint-actions-{name}"))
    href = actions.locator(tid("checkpoint-download-safetensors")).get_attribute("href")
    assert href == f"/api/runs/{source['id']}/checkpoints/{name}/export/?format=safetensors", href
    download = page.request.get(f"{netloom_server.url}{href}")
    assert download.ok and len(download.body()) > 1000, download.status
    steps.shot("checkpoints-panel")

    # --- "Run again": the dialog holds the run's settings ------------------------------------------
    page.click(tid("run-again"))
    dialog = page.locator(tid("train-dialog"))
    expect(dialog).to_be_visible()
    expect(dialog.locator("h2")).to_have_text(f"Run #{source['id']} again")
    expect(page.locator(tid("config-epochs"))).to_have_value("3")
    expect(page.locator(tid("config-optimizer.lr"))).to_have_value("0.01")
    expect(page.locator(tid("train-dataset"))).to_have_value(str(digits["id"]))
    page.click(tid("train-close"))
    expect(dialog).to_have_count(0)

    # --- "Fine-tune from this" on the best checkpoint, for revision 2 -------------------------------
    actions.locator(tid("checkpoint-finetune")).click()
    expect(dialog).to_be_visible()
    expect(page.locator(tid("init-checkpoint"))).to_be_checked()
    expect(page.locator(tid("init-run"))).to_have_value(str(source["id"]))
    expect(page.locator(tid("init-checkpoint-name"))).to_have_value(name)
    expect(page.locator(tid("init-mode"))).to_have_value("finetune")
    # Its own revision: every parameter loads.
    expect(page.locator(tid("init-loaded"))).to_contain_text("every parameter of the graph matches")
    page.select_option(tid("train-revision"), "2")
    mismatches = page.locator(tid("init-mismatches"))
    expect(mismatches).to_be_visible()
    conv2_rows = mismatches.locator(tid("init-node-conv2"))
    expect(conv2_rows).to_have_count(1)
    expect(conv2_rows).to_have_attribute("data-kind", "mismatched")
    expect(conv2_rows).to_contain_text("weight")
    expect(conv2_rows).to_contain_text("[32, 16, 3, 3] → graph [32, 16, 5, 5]")
    # Only conv2 differs: no other node is listed.
    expect(mismatches.locator("tbody tr")).to_have_count(1)
    page.check(tid("freeze-conv1"))
    dialog.locator(tid("init-plan")).scroll_into_view_if_needed()
    steps.shot("finetune-dialog-plan")

    page.click(tid("train-start"))
    expect(dialog).to_have_count(0)
    page.wait_for_url(re.compile(rf"/app/runs/(?!{source['id']}$)\d+$"))
    new_id = int(re.search(r"/runs/(\d+)$", page.url)[1])  # type: ignore[index]
    expect(page.locator(tid("run-page"))).to_have_attribute("data-run-id", str(new_id))
    run = api.get(f"/api/runs/{new_id}/")
    assert run["graph_revision"] != source["graph_revision"] and run["revision"] == 2, run
    assert run["init"]["run"] == source["id"] and run["init"]["checkpoint"] == name, run["init"]
    assert run["init"]["mode"] == "finetune"
    assert [m["node"] for m in run["init"]["plan"]["mismatched"]] == ["conv2"], run["init"]["plan"]
    assert run["config"]["freeze"] == ["conv1"]
    wait_succeeded(api, new_id)
    expect(page.locator(tid("run-status"))).to_have_text("succeeded", timeout=30_000)
    expect(page.locator(tid("run-init"))).to_have_text(f"fine-tuned from run {source['id']} ({name})")
    steps.shot("finetuned-run")

    # --- "Resume for more epochs" on the source's last checkpoint: twice the epochs, same revision --
    page.goto(f"{netloom_server.url}/app/runs/{source['id']}")
    last = page.locator(tid("checkpoints-panel")).locator('tr[data-kind="epoch"]').last
    last_name = (last.get_attribute("data-testid") or "").removeprefix("checkpoint-")
    page.locator(tid(f"checkpoint-actions-{last_name}")).locator(tid("checkpoint-resume")).click()
    expect(dialog).to_be_visible()
    expect(page.locator(tid("init-mode"))).to_have_value("resume")
    expect(page.locator(tid("config-epochs"))).to_have_value("6")
    expect(page.locator(tid("init-loaded"))).to_contain_text("every parameter of the graph matches")
    expect(page.locator(tid("init-problem"))).to_have_count(0)
    expect(page.locator(tid("train-start"))).to_be_enabled()
    page.click(tid("train-start"))
    expect(dialog).to_have_count(0)
    page.wait_for_url(re.compile(rf"/app/runs/(?!{source['id']}$)\d+$"))
    resumed_id = int(re.search(r"/runs/(\d+)$", page.url)[1])  # type: ignore[index]
    resumed = api.get(f"/api/runs/{resumed_id}/")
    assert resumed["init"]["mode"] == "resume" and resumed["init"]["checkpoint"] == last_name
    assert resumed["config"]["epochs"] == 6
