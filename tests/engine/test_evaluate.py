"""The end-of-run evaluation: per-class metrics, confusion matrix, misclassified, curves, regression."""

from __future__ import annotations

import json

import pytest
import torch
from sklearn import metrics as skm

from engine.data import load_dataset
from engine.data.tensorset import DatasetInfo, TensorSet
from engine.evaluate import MAX_POINTS, evaluate_model


class Fixed(torch.nn.Module):
    """Gives back the outputs stored for each input row (x holds the row number)."""

    def __init__(self, outputs: torch.Tensor) -> None:
        super().__init__()
        self.outputs = outputs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.outputs[x[:, 0].long()]


def _info(task: str, classes: list[str]) -> DatasetInfo:
    return DatasetInfo(
        task=task,
        feature_shape=[1],
        num_classes=len(classes) or None,
        classes=classes,
        feature_names=["row"],
        target_name="y",
        output_size=max(len(classes), 1),
    )


def test_multiclass_report_agrees_with_sklearn() -> None:
    gen = torch.Generator().manual_seed(0)
    n = 300
    y = torch.randint(0, 3, (n,), generator=gen)
    logits = torch.randn(n, 3, generator=gen) + 2.0 * torch.nn.functional.one_hot(y, 3)
    data = TensorSet(torch.arange(n, dtype=torch.float32)[:, None], y)
    report = evaluate_model(
        Fixed(logits), data, _info("classification", ["a", "b", "c"]), batch_size=64
    )
    pred = logits.argmax(1).numpy()
    p, r, f, s = skm.precision_recall_fscore_support(y.numpy(), pred)
    assert [c["class"] for c in report["per_class"]] == ["a", "b", "c"]
    assert [c["precision"] for c in report["per_class"]] == pytest.approx(p.tolist(), abs=1e-6)
    assert [c["recall"] for c in report["per_class"]] == pytest.approx(r.tolist(), abs=1e-6)
    assert [c["f1"] for c in report["per_class"]] == pytest.approx(f.tolist(), abs=1e-6)
    assert [c["support"] for c in report["per_class"]] == s.tolist()
    assert report["confusion_matrix"] == skm.confusion_matrix(y.numpy(), pred).tolist()
    wrong = report["misclassified"]
    assert report["misclassified_total"] == int((pred != y.numpy()).sum()) == len(wrong)
    assert [w["probability"] for w in wrong] == sorted(
        (w["probability"] for w in wrong), reverse=True
    )
    first = wrong[0]
    assert first["true"] != first["predicted"] and pred[first["index"]] == first["predicted_index"]
    bins = report["reliability"]["bins"]
    assert len(bins) == 10 and sum(b["count"] for b in bins) == n
    assert report["roc"] is None and report["precision_recall"] is None
    json.dumps(report, allow_nan=False)


def test_binary_report_has_roc_and_pr_curves_with_their_areas() -> None:
    gen = torch.Generator().manual_seed(1)
    n = 5000
    y = torch.randint(0, 2, (n,), generator=gen)
    logits = torch.stack([torch.zeros(n), torch.randn(n, generator=gen) + 1.5 * (2 * y - 1)], dim=1)
    data = TensorSet(torch.arange(n, dtype=torch.float32)[:, None], y)
    report = evaluate_model(Fixed(logits), data, _info("classification", ["no", "yes"]))
    positive = torch.softmax(logits, 1)[:, 1].numpy()
    assert report["roc"]["auc"] == pytest.approx(skm.roc_auc_score(y.numpy(), positive), abs=1e-5)
    assert report["precision_recall"]["average_precision"] == pytest.approx(
        skm.average_precision_score(y.numpy(), positive), abs=1e-4
    )
    assert report["roc"]["positive_class"] == "yes"
    assert len(report["roc"]["fpr"]) <= MAX_POINTS and report["roc"]["fpr"][0] == 0.0
    assert report["roc"]["fpr"][-1] == 1.0


def test_regression_report_is_bounded_and_agrees_with_sklearn() -> None:
    splits = load_dataset(
        {"source": {"kind": "builtin", "name": "diabetes"}, "split": {"val": 0.1, "test": 0.8}}
    )
    test = splits.test
    gen = torch.Generator().manual_seed(2)
    outputs = test.y.float() + 20 * torch.randn(len(test.y), 1, generator=gen)
    data = TensorSet(torch.arange(len(test.y), dtype=torch.float32)[:, None], test.y)
    report = evaluate_model(Fixed(outputs), data, splits.info)
    y, p = test.y.numpy().ravel(), outputs.numpy().ravel()
    assert report["mae"] == pytest.approx(skm.mean_absolute_error(y, p), rel=1e-5)
    assert report["rmse"] == pytest.approx(skm.mean_squared_error(y, p) ** 0.5, rel=1e-5)
    assert report["r2"] == pytest.approx(skm.r2_score(y, p), rel=1e-4)
    assert report["pairs_total"] == len(y) and len(report["pairs"]["true"]) == min(
        len(y), MAX_POINTS
    )
    assert sum(report["residuals"]["counts"]) == len(y)
    assert len(report["residuals"]["edges"]) == len(report["residuals"]["counts"]) + 1


def test_pairs_are_capped_at_max_points() -> None:
    n = MAX_POINTS * 3
    y = torch.randn(n, 1)
    data = TensorSet(torch.arange(n, dtype=torch.float32)[:, None], y)
    report = evaluate_model(Fixed(y + 0.1), data, _info("regression", []))
    assert len(report["pairs"]["index"]) == MAX_POINTS
    assert report["pairs"]["index"][0] == 0 and report["pairs"]["index"][-1] == n - 1
