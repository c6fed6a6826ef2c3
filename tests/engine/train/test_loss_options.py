"""label_smoothing and class_weights: what they do to training, and the errors that name them."""

from __future__ import annotations

import pytest
import torch
from conftest import mlp_spec

from engine.train import TrainingError, train
from engine.train.metrics import TaskSpec
from engine.train.setup import class_weights


def test_balanced_weights_are_n_over_k_times_the_class_count(digits):
    cfg = type("Cfg", (), {"class_weights": "balanced", "label_smoothing": 0.0})()
    weights = class_weights(cfg, TaskSpec("multiclass", "cross_entropy", 10, 10), digits.train, torch.device("cpu"))
    counts = torch.bincount(digits.train.y, minlength=10).double()
    torch.testing.assert_close(weights.double(), len(digits.train) / (10 * counts), rtol=1e-6, atol=0)


def test_a_class_weighted_zero_is_not_learned(digits):
    result = train(mlp_spec([1, 8, 8], 10), digits,
                   {"epochs": 3, "optimizer": {"lr": 0.01}, "class_weights": [0.0] + [1.0] * 9})
    matrix = result.metrics["test/confusion_matrix"]
    assert matrix[0][0] <= 0.2 * sum(matrix[0])  # class 0 is hardly ever predicted
    assert result.metrics["test/accuracy"] > 0.7  # the other nine are


def test_weights_must_be_one_per_class(digits):
    with pytest.raises(TrainingError, match="class_weights has 3 weights but there are 10 classes") as err:
        train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 1, "class_weights": [1, 2, 3]})
    assert err.value.field == "class_weights"


def test_label_smoothing_shapes_the_training_loss_only(digits):
    # Smoothed targets (eps 0.3 over 10 classes) have entropy 1.18: the training loss cannot go
    # below it, while val/loss is the plain cross-entropy and does.
    result = train(mlp_spec([1, 8, 8], 10), digits,
                   {"epochs": 4, "optimizer": {"lr": 0.01}, "label_smoothing": 0.3})
    assert result.metrics["train/loss"] > 1.17
    assert result.metrics["val/loss"] < 0.9 and result.metrics["val/accuracy"] > 0.85


@pytest.mark.parametrize("field", ["label_smoothing", "class_weights"])
def test_on_a_regression_dataset_they_are_a_field_error(diabetes, field):
    value = 0.1 if field == "label_smoothing" else "balanced"
    with pytest.raises(TrainingError, match=f"{field} applies to classification") as err:
        train(mlp_spec([10], 1), diabetes, {"epochs": 1, field: value})
    assert err.value.field == field
