"""The end-of-run evaluation: how good a model is on the test split and where it is wrong.

`evaluate_model(model, test, info)` runs the model once over a split (no augmentation) and
computes, with torchmetrics, what the run page draws: for classification the per-class
precision, recall, F1 and support, the confusion matrix, the misclassified samples (sortable by
confidence), a reliability curve and, for two classes, the ROC and precision-recall curves with
their areas; for regression MAE, RMSE, R^2, predicted-versus-true pairs (bounded) and a
histogram of the residuals. The answer is plain JSON (no NaN: null).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from engine.data.tensorset import BatchSource, DatasetInfo

EVALUATION_VERSION = 1
MAX_POINTS = 2000  # predicted-vs-true pairs, and points of a ROC / PR curve
MAX_MISCLASSIFIED = 1000
RELIABILITY_BINS = 10
RESIDUAL_BINS = 30


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _floats(t: Tensor, digits: int = 6) -> list[float]:
    return [round(float(v), digits) for v in t.detach().double().cpu().reshape(-1).tolist()]


def _every(n: int, most: int) -> Tensor:
    """At most `most` evenly spaced indices of range(n), first and last included."""
    if n <= most:
        return torch.arange(n)
    return torch.linspace(0, n - 1, most).round().long().unique()


@torch.no_grad()
def predict_split(
    model: torch.nn.Module,
    data: BatchSource,
    *,
    batch_size: int = 512,
    device: str | torch.device = "cpu",
) -> tuple[Tensor, Tensor]:
    """(outputs (N, k) float32, targets) of a model over a split, in order, on the CPU."""
    model = model.eval().to(device)
    outs, targets = [], []
    for xb, yb in data.batches(batch_size, augment=False):
        out = model(xb.to(device))
        outs.append(out.float().reshape(len(out), -1).cpu())
        targets.append(yb.cpu())
    if not outs:
        raise ValueError("the split is empty: there is nothing to evaluate")
    return torch.cat(outs), torch.cat(targets)


def _probabilities(outputs: Tensor) -> Tensor:
    if outputs.shape[1] == 1:  # one logit for two classes
        positive = torch.sigmoid(outputs[:, 0])
        return torch.stack([1 - positive, positive], dim=1)
    return torch.softmax(outputs, dim=1)


def _reliability(confidence: Tensor, correct: Tensor, bins: int) -> dict[str, Any]:
    edges = torch.linspace(0, 1, bins + 1)
    slot = torch.clamp((confidence * bins).long(), max=bins - 1)
    out = []
    ece = 0.0
    for b in range(bins):
        mask = slot == b
        count = int(mask.sum())
        conf = float(confidence[mask].mean()) if count else None
        acc = float(correct[mask].float().mean()) if count else None
        if count:
            ece += count / len(confidence) * abs(acc - conf)  # type: ignore[operator]
        out.append(
            {
                "lower": round(float(edges[b]), 6),
                "upper": round(float(edges[b + 1]), 6),
                "count": count,
                "confidence": conf,
                "accuracy": acc,
            }
        )
    return {"bins": out, "expected_calibration_error": ece}


def _classification(outputs: Tensor, target: Tensor, info: DatasetInfo) -> dict[str, Any]:
    from torchmetrics.functional.classification import (
        binary_auroc,
        binary_average_precision,
        binary_precision_recall_curve,
        binary_roc,
        multiclass_confusion_matrix,
        multiclass_f1_score,
        multiclass_precision,
        multiclass_recall,
    )

    probs = _probabilities(outputs)
    n_classes = probs.shape[1]
    target = target.long().reshape(-1)
    pred = probs.argmax(dim=1)
    kw: dict[str, Any] = {"num_classes": n_classes, "average": None}
    precision = multiclass_precision(pred, target, **kw)
    recall = multiclass_recall(pred, target, **kw)
    f1 = multiclass_f1_score(pred, target, **kw)
    support = torch.bincount(target, minlength=n_classes)
    names = (
        list(info.classes) if len(info.classes) == n_classes else [str(i) for i in range(n_classes)]
    )
    per_class = [
        {
            "class": names[k],
            "precision": float(precision[k]),
            "recall": float(recall[k]),
            "f1": float(f1[k]),
            "support": int(support[k]),
        }
        for k in range(n_classes)
    ]
    confidence = probs.max(dim=1).values
    wrong = torch.nonzero(pred != target).reshape(-1)
    order = wrong[torch.argsort(confidence[wrong], descending=True, stable=True)]
    misclassified = [
        {
            "index": int(i),
            "true": names[int(target[i])],
            "true_index": int(target[i]),
            "predicted": names[int(pred[i])],
            "predicted_index": int(pred[i]),
            "probability": round(float(confidence[i]), 6),
            "true_probability": round(float(probs[i, target[i]]), 6),
        }
        for i in order[:MAX_MISCLASSIFIED]
    ]
    report: dict[str, Any] = {
        "accuracy": float((pred == target).float().mean()),
        "per_class": per_class,
        "macro": {
            "precision": float(precision.mean()),
            "recall": float(recall.mean()),
            "f1": float(f1.mean()),
        },
        "confusion_matrix": multiclass_confusion_matrix(
            pred, target, num_classes=n_classes
        ).tolist(),
        "misclassified": misclassified,
        "misclassified_total": len(wrong),
        "reliability": _reliability(confidence, pred == target, RELIABILITY_BINS),
        "roc": None,
        "precision_recall": None,
    }
    if n_classes == 2:
        positive = probs[:, 1]
        fpr, tpr, thresholds = binary_roc(positive, target)
        keep = _every(len(fpr), MAX_POINTS)
        report["roc"] = {
            "positive_class": names[1],
            "fpr": _floats(fpr[keep]),
            "tpr": _floats(tpr[keep]),
            "thresholds": _floats(thresholds[keep].clamp(max=1.0)),
            "auc": float(binary_auroc(positive, target)),
        }
        prec, rec, thr = binary_precision_recall_curve(positive, target)
        keep = _every(len(prec), MAX_POINTS)
        report["precision_recall"] = {
            "positive_class": names[1],
            "precision": _floats(prec[keep]),
            "recall": _floats(rec[keep]),
            "thresholds": _floats(thr[keep[keep < len(thr)]]),
            "average_precision": float(binary_average_precision(positive, target)),
        }
    return report


def _regression(outputs: Tensor, target: Tensor) -> dict[str, Any]:
    from torchmetrics.functional import mean_absolute_error, mean_squared_error, r2_score

    target = target.float().reshape(len(target), -1)
    pred = outputs.reshape(len(outputs), -1)[:, : target.shape[1]]
    residual = pred - target
    keep = _every(len(pred), MAX_POINTS)
    lo, hi = float(residual.min()), float(residual.max())
    if hi <= lo:
        hi = lo + 1.0
    counts = torch.histc(residual.double(), bins=RESIDUAL_BINS, min=lo, max=hi)
    return {
        "mae": float(mean_absolute_error(pred, target)),
        "rmse": math.sqrt(float(mean_squared_error(pred, target))),
        "r2": float(r2_score(pred, target)) if len(pred) > 1 else None,
        "pairs": {
            "index": keep.tolist(),
            "true": _floats(target[keep, 0]),
            "predicted": _floats(pred[keep, 0]),
        },
        "pairs_total": len(pred),
        "residuals": {
            "edges": _floats(torch.linspace(lo, hi, RESIDUAL_BINS + 1)),
            "counts": [int(c) for c in counts.tolist()],
        },
    }


def evaluate_model(
    model: torch.nn.Module,
    data: BatchSource,
    info: DatasetInfo,
    *,
    split: str = "test",
    batch_size: int = 512,
    device: str | torch.device = "cpu",
) -> dict[str, Any]:
    """The evaluation JSON of `model` on `data` (the test split, unless told)."""
    outputs, target = predict_split(model, data, batch_size=batch_size, device=device)
    report: dict[str, Any] = {
        "version": EVALUATION_VERSION,
        "task": info.task,
        "split": split,
        "rows": len(outputs),
        "classes": list(info.classes),
    }
    if info.task == "classification":
        report.update(_classification(outputs, target, info))
    else:
        report.update(_regression(outputs, target))
    return _clean(report)
