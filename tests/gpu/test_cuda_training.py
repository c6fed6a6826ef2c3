"""What only a CUDA device can show: GPU training, bf16/fp16 autocast, torch.compile.

Run with `make gpu-check` on a machine with a GPU; skipped everywhere else.
"""

import json
from pathlib import Path

import pytest
import torch

from engine.data import DataRecipe, load_dataset
from engine.spec import parse_spec
from engine.train import train

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

SPECS = Path(__file__).resolve().parents[2] / "examples" / "specs"


@pytest.fixture(scope="module")
def digits():
    return load_dataset(DataRecipe.model_validate({"source": {"kind": "builtin", "name": "digits"}}))


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_digits_cnn_trains_on_cuda_at_every_precision(digits, tmp_path, precision):
    spec = parse_spec(json.loads((SPECS / "digits_cnn.json").read_text()))
    config = {"epochs": 15, "device": "cuda", "precision": precision, "batch_size": 64,
              "optimizer": {"name": "adam", "lr": 0.003}}
    result = train(spec, digits, config, out_dir=tmp_path)
    assert result.metrics["test/accuracy"] >= 0.93, result.metrics


def test_compiled_model_matches_eager_accuracy_on_cuda(digits, tmp_path):
    spec = parse_spec(json.loads((SPECS / "digits_mlp.json").read_text()))
    base = {"epochs": 10, "device": "cuda", "batch_size": 64, "optimizer": {"name": "adam", "lr": 0.003}}
    eager = train(spec, digits, base, out_dir=tmp_path / "eager")
    compiled = train(spec, digits, {**base, "compile": True}, out_dir=tmp_path / "compiled")
    assert compiled.metrics["test/accuracy"] >= eager.metrics["test/accuracy"] - 0.03
