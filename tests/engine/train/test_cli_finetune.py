"""`python -m engine train --init-from CKPT --freeze NODES`."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from engine.cli import main

SPEC = Path(__file__).resolve().parents[3] / "examples" / "specs" / "iris_mlp.json"


def test_train_from_a_checkpoint_with_a_frozen_node(tmp_path, capsys):
    first = tmp_path / "first"
    assert main(["train", str(SPEC), "--data", "iris", "--epochs", "2", "--out", str(first),
                 "--quiet", "--no-onnx"]) == 0
    capsys.readouterr()
    best = first / "checkpoints" / "best"
    second = tmp_path / "second"
    assert main(["train", str(SPEC), "--data", "iris", "--epochs", "2", "--out", str(second), "--quiet",
                 "--no-onnx", "--init-from", str(best), "--freeze", "fc1"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert "fc1.weight" in printed["init_plan"]["loaded"] and printed["init_plan"]["mismatched"] == []
    assert json.loads((second / "config.json").read_text())["freeze"] == ["fc1"]
    assert torch.equal(load_file(second / "model.safetensors")["fc1.weight"],
                       load_file(best / "model.safetensors")["fc1.weight"])


def test_bad_fine_tune_arguments_are_one_line_errors(tmp_path, capsys):
    assert main(["train", str(SPEC), "--data", "iris", "--init-from", str(tmp_path), "--quiet"]) == 2
    assert "is not a checkpoint" in capsys.readouterr().err
    assert main(["train", str(SPEC), "--data", "iris", "--init-from", str(tmp_path),
                 "--resume", str(tmp_path), "--quiet"]) == 2
    assert "give one" in capsys.readouterr().err
    assert main(["train", str(SPEC), "--data", "iris", "--epochs", "1", "--freeze", "nope",
                 "--out", str(tmp_path / "o"), "--quiet", "--no-onnx"]) == 1
    assert "freeze names 'nope'" in capsys.readouterr().err
