"""The default export of a run whose validation loss rose holds the best checkpoint's weights.

Against the real stack (ASGI server + a Celery worker + Redis): a big MLP trained on 60 rows of
the two spirals for 30 epochs overfits (validation loss climbs from under 0.9 at epoch 3 to
well above it; seeded). The run's default export is the `best` checkpoint (its step, its
weights), and the downloaded `model.py` + `model.safetensors`, in a process with only torch and
safetensors, reproduce that checkpoint's recorded validation accuracy on the validation split.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.engine.export.test_export import torch_only_path
from tests.stack.stack import ServiceStack
from tests.stack.test_run_e2e import wait_status

pytestmark = [pytest.mark.slow, pytest.mark.one_database]

MLP = {
    "version": 1,
    "inputs": [{"id": "x", "shape": [2], "dtype": "float32"}],
    "nodes": [
        {"id": "fc1", "op": "Linear", "inputs": ["x"], "params": {"out_features": 128}},
        {"id": "a1", "op": "ReLU", "inputs": ["fc1"]},
        {"id": "fc2", "op": "Linear", "inputs": ["a1"], "params": {"out_features": 128}},
        {"id": "a2", "op": "ReLU", "inputs": ["fc2"]},
        {"id": "out", "op": "Linear", "inputs": ["a2"], "params": {"out_features": 2}},
    ],
    "outputs": ["out"],
}
# 10% of the 600 points train (60 rows): the network memorises them and grows confident on the rest.
OVERFIT_SPLIT = {"val": 0.45, "test": 0.45, "seed": 0}
OVERFIT_CONFIG = {"device": "cpu", "epochs": 30, "batch_size": 16, "optimizer": {"lr": 0.01}, "seed": 0,
                  "log_every": 2, "keep_checkpoints": 2}

# Only torch and safetensors on the path: the export's model.py and weights, the validation inputs.
CHILD = r"""
import importlib.util, json, sys
sys.path = [p for p in sys.path if 'site-packages' not in p and 'dist-packages' not in p] + [SITE]
for banned in ('engine', 'webapp', 'workers', 'django', 'numpy'):
    assert importlib.util.find_spec(banned) is None, banned + ' is importable'
import torch
from safetensors.torch import load_file
spec = importlib.util.spec_from_file_location('model', EXPORT + '/model.py')
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
model = module.Net()
model.load_state_dict(load_file(EXPORT + '/model.safetensors'))
model.eval()
data = load_file(DATA)
with torch.no_grad():
    predicted = model(data['x']).argmax(dim=1)
print(json.dumps({'accuracy': (predicted == data['y']).double().mean().item(), 'rows': len(data['y'])}))
"""


def train_spirals(stack: ServiceStack) -> dict[str, Any]:
    api = stack.api("a")
    team = stack.world["a"]["team"]
    dataset = api.post("/api/datasets/", json={"team": team, "builtin": "spirals"})
    assert dataset.status_code == 201, dataset.text
    graph = api.post("/api/graphs/", json={"team": team, "name": "spirals mlp", "spec": MLP})
    assert graph.status_code == 201, graph.text
    run = api.post("/api/runs/", json={"graph": graph.json()["id"], "dataset": dataset.json()["id"],
                                       "split": OVERFIT_SPLIT, "config": OVERFIT_CONFIG, "name": "overfit"})
    assert run.status_code == 201, run.text
    done = wait_status(stack, run.json()["id"], {"succeeded", "failed", "cancelled"}, timeout=240)
    assert done["status"] == "succeeded", (done, stack.logs())
    return done


def test_the_default_export_holds_the_best_checkpoint_and_reproduces_its_accuracy(
    stack: ServiceStack, tmp_path: Path
) -> None:
    from safetensors.torch import load, save_file

    from engine.data import DataRecipe, load_dataset

    api = stack.api("a")
    run = train_spirals(stack)
    run_id = run["id"]
    val_loss = api.get(f"/api/runs/{run_id}/metrics/?keys=val/loss").json()["series"]["val/loss"]
    lowest = min(range(len(val_loss["value"])), key=lambda i: val_loss["value"][i])
    # The validation loss rose: its lowest point is early, and the last one is far above it.
    assert val_loss["epoch"][lowest] < 15 and val_loss["value"][-1] > 1.5 * val_loss["value"][lowest], val_loss

    best = run["best_checkpoint"]
    assert best["name"] == "best" and best["step"] == val_loss["step"][lowest], (best, val_loss)
    assert best["step"] < run["progress"]["step"]
    assert best["metrics"]["val/loss"] == pytest.approx(val_loss["value"][lowest])
    assert run["summary"]["best"]["val/loss"]["step"] == best["step"]

    checkpoints = api.get(f"/api/runs/{run_id}/checkpoints/").json()
    assert [c["name"] for c in checkpoints if c["default"]] == ["best"]
    assert {c["kind"] for c in checkpoints} == {"best", "epoch"}

    deadline = time.monotonic() + 120  # the export task (ONNX + zip) writes the folder again: wait for it
    while api.get(f"/api/runs/{run_id}/").json()["exports"]["status"] == "pending" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert api.get(f"/api/runs/{run_id}/").json()["exports"]["status"] == "ready"
    bundle = api.get(f"/api/runs/{run_id}/export/?format=zip")
    assert bundle.status_code == 200, bundle.text
    folder = tmp_path / "export"
    with zipfile.ZipFile(io.BytesIO(bundle.content)) as zf:
        zf.extractall(folder)
    manifest = json.loads((folder / "export.json").read_text())
    assert manifest["checkpoint"] == {"name": "best", "step": best["step"], "epoch": best["epoch"]}
    # The export's weights are the best checkpoint's, tensor for tensor.
    exported = load((folder / "model.safetensors").read_bytes())
    checkpoint = api.get(f"/api/runs/{run_id}/checkpoints/best/export/?format=safetensors")
    assert checkpoint.status_code == 200, checkpoint.text
    kept = load(checkpoint.content)
    assert set(exported) == set(kept) and all(bool((exported[k] == kept[k]).all()) for k in kept)

    # The validation split the run was scored on, as tensors the network takes.
    splits = load_dataset(DataRecipe.model_validate(run["recipe"]))
    save_file({"x": splits.val.x.contiguous(), "y": splits.val.y.contiguous()}, tmp_path / "val.safetensors")
    code = (CHILD.replace("SITE", repr(str(torch_only_path(tmp_path)))).replace("EXPORT", repr(str(folder)))
            .replace("DATA", repr(str(tmp_path / "val.safetensors"))))
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    assert answer["rows"] == len(splits.val)
    assert answer["accuracy"] == pytest.approx(best["metrics"]["val/accuracy"], abs=1e-9)
    # ... and it is not the overfit final model's accuracy by accident.
    assert run["final_metrics"]["val/loss"] > best["metrics"]["val/loss"]

    # A kept epoch checkpoint is explained with its own weights (computed by the worker).
    last_epoch = [c["name"] for c in checkpoints if c["kind"] == "epoch"][-1]
    created = api.post(f"/api/runs/{run_id}/explanations/", json={"index": 0, "method": "saliency",
                                                                   "checkpoint": last_epoch})
    assert created.status_code == 202, created.text
    deadline = time.monotonic() + 120
    explanation = created.json()
    while explanation["status"] not in ("succeeded", "failed") and time.monotonic() < deadline:
        time.sleep(0.2)
        explanation = api.get(f"/api/explanations/{explanation['id']}/").json()
    assert explanation["status"] == "succeeded", explanation
    assert explanation["sample"]["checkpoint"] == last_epoch
