"""Weights trained elsewhere, fine-tuned in Netloom (issue 16): `python -m engine import` writes a
spec and the weights named as the spec's nodes, the graphs page's import dialog takes both in any
order (the weights become a run's checkpoint `imported`; weights that do not fit are refused and
leave no graph behind; a name already taken is flagged), and that checkpoint's "Fine-tune from this" starts a run on a dataset
the user picks (the imported run has none), at the priority the user typed.

The module is the skip-connection MLP of the import tests, built for iris (4 features, 3 classes);
its "trained" weights are random, written with safetensors as a user's own training would."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from playwright.sync_api import Page, expect
from safetensors.torch import load_file, save_file

from tests.engine.test_import import MODELS, model, randomise

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, sign_in, tid
from .test_judge import Api, wait_succeeded

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SIZES = {"features": 4, "classes": 3}  # iris


def write_import(tmp_path: Path) -> tuple[Path, Path]:
    """The spec and the weights the import command writes for a SkipMLP with trained-looking weights."""
    mlp = model("mlp_skip.py:SkipMLP", **SIZES)
    randomise(mlp, seed=4)
    trained = tmp_path / "trained.safetensors"
    save_file({k: v.contiguous() for k, v in mlp.state_dict().items()}, trained)
    spec_path, weights_path = tmp_path / "skip_mlp.json", tmp_path / "skip_mlp.safetensors"
    done = subprocess.run(
        [sys.executable, "-m", "engine", "import", f"{MODELS / 'mlp_skip.py'}:SkipMLP",
         "--input-shape", "4", "--init-args", json.dumps(SIZES), "--weights", str(trained),
         "--out", str(spec_path), "--weights-out", str(weights_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reproduces the module's outputs" in done.stdout, done.stdout
    return spec_path, weights_path


def test_imported_weights_are_fine_tuned_on_a_dataset_the_user_picks(
    page: Page,
    netloom_server: LiveServer,
    new_account: Account,
    celery_worker: Path,
    tmp_path: Path,
) -> None:
    spec_path, weights_path = write_import(tmp_path)
    steps = Steps(page, ARTIFACTS / "import-weights")
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])
    iris = api.post("/api/datasets/", {"team": team, "builtin": "iris"})
    page.reload()
    expect(page.locator(tid("graph-list-page"))).to_be_visible()

    # --- the graphs page: one dialog; weights that do not fit are refused and nothing is made -----
    page.click(tid("import-open"))
    dialog = page.locator(tid("import-dialog"))
    expect(dialog).to_be_visible()
    page.set_input_files(tid("import-spec"), str(spec_path))
    expect(page.locator(tid("import-spec-chosen"))).to_contain_text("skip_mlp.json")
    expect(page.locator(tid("import-name"))).to_have_value("skip mlp")
    # The same network trained for 5 classes: its head does not fit the 3-class spec.
    wrong = tmp_path / "skip_mlp_5_classes.safetensors"
    five = load_file(weights_path)
    five["head.weight"] = torch.zeros(5, five["head.weight"].shape[1])
    five["head.bias"] = torch.zeros(5)
    save_file(five, wrong)
    page.set_input_files(tid("import-weights"), str(wrong))
    page.click(tid("import-submit"))
    refusal = page.locator(tid("import-weights-error"))
    expect(refusal).to_contain_text("do not fit", timeout=30_000)
    expect(refusal).to_contain_text("head.weight: shape [5, ")
    expect(refusal.locator("li")).to_have_count(2)  # each key that does not fit
    steps.shot("weights-refused")
    assert api.get(f"/api/graphs/?team={team}")["count"] == 0  # no weightless graph left behind

    # ... the right weights, chosen after the spec: the graph and its weights, on the canvas.
    page.set_input_files(tid("import-weights"), str(weights_path))
    expect(refusal).to_have_count(0)
    expect(page.locator(tid("import-weights-chosen"))).to_contain_text(weights_path.name)
    steps.shot("weights-chosen")
    page.click(tid("import-submit"))
    page.wait_for_url(re.compile(r"/app/graphs/\d+\?weights_run=\d+$"), timeout=30_000)
    status = page.locator(tid("imported-weights"))
    expect(status).to_contain_text("holds them as checkpoint “imported”")
    expect(page.locator(tid("status-validity"))).to_have_text("Valid", timeout=30_000)
    steps.shot("imported")
    graphs = api.get(f"/api/graphs/?team={team}")["results"]
    assert [g["name"] for g in graphs] == ["skip mlp"], graphs

    # --- the run the weights became: its checkpoint `imported` -------------------------------------
    status.locator(tid("imported-run")).click()
    page.wait_for_url(re.compile(r"/app/runs/\d+$"))
    imported_id = int(re.search(r"/runs/(\d+)$", page.url)[1])  # type: ignore[index]
    imported = api.get(f"/api/runs/{imported_id}/")
    assert imported["dataset"] is None and imported["origin"]["kind"] == "import", imported
    expect(page.locator(tid("run-status"))).to_have_text("succeeded")
    panel = page.locator(tid("checkpoints-panel"))
    panel.scroll_into_view_if_needed()
    expect(panel.locator("tbody tr[data-kind]")).to_have_count(1)
    expect(panel.locator(tid("checkpoint-imported"))).to_contain_text("imported")
    steps.shot("imported-run-checkpoints")

    # --- "Fine-tune from this": no dataset is picked for the user ----------------------------------
    panel.locator(tid("checkpoint-actions-imported")).locator(tid("checkpoint-finetune")).click()
    dialog = page.locator(tid("train-dialog"))
    expect(dialog).to_be_visible()
    expect(page.locator(tid("init-checkpoint"))).to_be_checked()
    expect(page.locator(tid("init-run"))).to_have_value(str(imported_id))
    expect(page.locator(tid("init-checkpoint-name"))).to_have_value("imported")
    expect(page.locator(tid("init-mode"))).to_have_value("finetune")
    expect(page.locator(tid("init-loaded"))).to_contain_text("every parameter of the graph matches")
    expect(page.locator(tid("train-dataset"))).to_have_value("")
    expect(page.locator(tid("train-pick-dataset"))).to_be_visible()
    expect(page.locator(tid("train-priority"))).to_have_value("0")
    steps.shot("finetune-dialog")
    page.click(tid("train-start"))
    expect(page.locator(tid("error-dataset"))).to_have_text("Choose a dataset.")
    assert api.get(f"/api/runs/?team={team}")["count"] == 1  # nothing was queued

    # A priority out of bounds: the server's 400 shows next to the field.
    page.select_option(tid("train-dataset"), str(iris["id"]))
    expect(page.locator(tid("train-pick-dataset"))).to_have_count(0)
    page.fill(tid("config-epochs"), "2")
    page.fill(tid("train-priority"), "11")
    page.click(tid("train-start"))
    expect(page.locator(tid("error-priority"))).to_contain_text("from -10 to 10")
    expect(dialog).to_be_visible()
    dialog.locator(tid("train-priority")).scroll_into_view_if_needed()
    steps.shot("priority-refused")

    page.fill(tid("train-priority"), "3")
    expect(page.locator(tid("error-priority"))).to_have_count(0)
    page.click(tid("train-start"))
    expect(dialog).to_have_count(0)
    page.wait_for_url(re.compile(rf"/app/runs/(?!{imported_id}$)\d+$"))
    new_id = int(re.search(r"/runs/(\d+)$", page.url)[1])  # type: ignore[index]
    run = api.get(f"/api/runs/{new_id}/")
    assert run["dataset"] == iris["id"] and run["priority"] == 3, run
    init = run["init"]
    assert init["run"] == imported_id and init["checkpoint"] == "imported", init
    assert init["mode"] == "finetune" and init["plan"]["mismatched"] == [], init
    assert run["config"]["epochs"] == 2
    wait_succeeded(api, new_id)
    expect(page.locator(tid("run-status"))).to_have_text("succeeded", timeout=30_000)
    expect(page.locator(tid("run-init"))).to_contain_text(f"fine-tuned from run {imported_id}")
    steps.shot("finetuned-run")

    # ... the same files again, weights first: the dialog warns of the name already taken.
    page.goto(f"{netloom_server.url}/app/")
    page.click(tid("import-open"))
    page.set_input_files(tid("import-weights"), str(weights_path))
    page.set_input_files(tid("import-spec"), str(spec_path))
    expect(page.locator(tid("import-duplicate"))).to_contain_text("already has a graph called “skip mlp”")
    steps.shot("duplicate-name")
    page.fill(tid("import-name"), "skip mlp v2")
    expect(page.locator(tid("import-duplicate"))).to_have_count(0)
    page.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
