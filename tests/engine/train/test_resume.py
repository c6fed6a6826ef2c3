"""Run checkpoints: what state.json holds, and resuming from the format older runs wrote."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import mlp_spec

from engine.train import TrainingError, train
from engine.train.resume import find_checkpoint

CONFIG = {
    "epochs": 3,
    "batch_size": 64,
    "seed": 3,
    "optimizer": {"name": "adamw", "lr": 0.01, "weight_decay": 0.05},
    "early_stopping": {"metric": "val/accuracy", "mode": "max", "patience": 5},
    "keep_checkpoints": 5,
}


def test_state_json_holds_the_monitor_and_the_last_metrics(digits, tmp_path):
    result = train(mlp_spec([1, 8, 8], 10), digits, CONFIG, out_dir=tmp_path)
    state = json.loads((result.last_checkpoint / "state.json").read_text())
    trainer = state["trainer"]
    assert set(trainer) == {"monitor", "best", "last_val", "last_train"}
    # The best checkpoint follows early stopping's metric when `best` is not set.
    assert trainer["best"]["best_checkpoint"] == str(tmp_path / "checkpoints" / "best")
    assert trainer["best"]["metric"] == "val/accuracy" and trainer["best"]["mode"] == "max"
    assert trainer["best"]["best_value"] == trainer["monitor"]["best_value"]
    assert trainer["monitor"]["best_value"] == max(
        json.loads((tmp_path / "checkpoints" / f"epoch-000{e}" / "state.json").read_text())
        ["trainer"]["last_val"]["val/accuracy"] for e in (1, 2, 3)
    )
    assert trainer["last_val"]["val/accuracy"] == result.metrics["val/accuracy"]
    assert trainer["last_train"]["train/loss"] == result.metrics["train/loss"]


def test_a_checkpoint_in_the_older_book_format_resumes_exactly(digits, tmp_path):
    spec = mlp_spec([1, 8, 8], 10)
    full = train(spec, digits, CONFIG, out_dir=tmp_path / "full")
    epoch1 = tmp_path / "full" / "checkpoints" / "epoch-0001"
    state_file = epoch1 / "state.json"
    state = json.loads(state_file.read_text())
    state["trainer"]["book"] = state["trainer"].pop("monitor")
    state_file.write_text(json.dumps(state))
    resumed = train(spec, digits, CONFIG, out_dir=tmp_path / "resumed", resume_from=epoch1)
    assert resumed.steps == full.steps
    for key, value in full.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[key], value), key
    assert resumed.metrics["test/accuracy"] == full.metrics["test/accuracy"]
    # The best value came back from `book`: the resumed run's best is the full run's.
    resumed_state = json.loads((resumed.last_checkpoint / "state.json").read_text())
    full_state = json.loads((full.last_checkpoint / "state.json").read_text())
    assert resumed_state["trainer"]["monitor"]["best_value"] == full_state["trainer"]["monitor"]["best_value"]


def test_find_checkpoint_takes_a_run_directory_or_a_checkpoint(digits, tmp_path):
    train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 2, "keep_checkpoints": 2}, out_dir=tmp_path)
    assert find_checkpoint(tmp_path).path.name == "epoch-0002"
    assert find_checkpoint(tmp_path / "checkpoints" / "epoch-0001").path.name == "epoch-0001"
    with pytest.raises(TrainingError, match="no checkpoint found"):
        find_checkpoint(tmp_path / "nowhere")
