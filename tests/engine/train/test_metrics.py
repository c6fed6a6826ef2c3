"""Metric values agree with torchmetrics' own definitions."""

from __future__ import annotations

import pytest
import torch
from torchmetrics.functional import classification as tmf

from engine.data import TensorSet
from engine.train.metrics import TaskSpec, evaluate


class Fixed(torch.nn.Module):
    """Returns precomputed logits row by row."""

    def __init__(self, logits: torch.Tensor) -> None:
        super().__init__()
        self.logits = logits
        self.dummy = torch.nn.Parameter(torch.zeros(()))

    def forward(self, idx):
        return self.logits[idx.long().view(-1)] + 0 * self.dummy


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_accuracy_f1_and_confusion_match_torchmetrics(seed):
    gen = torch.Generator().manual_seed(seed)
    n, k = 300, 7
    logits = torch.randn(n, k, generator=gen)
    target = torch.randint(0, k - 2, (n,), generator=gen)  # classes 5, 6 never in the target
    data = TensorSet(torch.arange(n, dtype=torch.float32)[:, None], target)
    task = TaskSpec("multiclass", "cross_entropy", k, k)
    got = evaluate(Fixed(logits), data, task, prefix="val", batch_size=64, device=torch.device("cpu"))
    preds = logits.argmax(1)
    assert got["val/accuracy"] == pytest.approx(float(tmf.multiclass_accuracy(preds, target, k, average="micro")), abs=1e-6)
    assert got["val/f1"] == pytest.approx(float(tmf.multiclass_f1_score(preds, target, k, average="macro")), abs=1e-6)
    assert got["val/confusion_matrix"] == tmf.multiclass_confusion_matrix(preds, target, k).tolist()
    assert got["val/loss"] == pytest.approx(float(torch.nn.functional.cross_entropy(logits, target)), abs=1e-6)


def test_binary_classification_with_one_logit(tmp_path):
    from engine.data import DataRecipe, load_dataset
    from engine.train import train

    splits = load_dataset(DataRecipe.model_validate({"source": {"kind": "builtin", "name": "moons"}}))
    spec = {"version": 1, "inputs": [{"id": "x", "shape": [2]}], "nodes": [
        {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
        {"id": "act", "op": "ReLU", "inputs": ["fc1"]},
        {"id": "out", "op": "Linear", "params": {"out_features": 1}, "inputs": ["act"]}],
        "outputs": ["out"]}
    result = train(spec, splits, {"epochs": 10, "loss": "bce_with_logits", "optimizer": {"lr": 0.01}})
    assert result.metrics["test/accuracy"] > 0.8
    assert len(result.metrics["test/confusion_matrix"]) == 2
