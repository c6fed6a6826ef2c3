"""Losses, task resolution and evaluation metrics (torchmetrics), named `split/metric`."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.nn.functional as F

from engine.train.errors import TrainingError

__all__ = [
    "TaskSpec",
    "adapt_target",
    "evaluate",
    "float_metrics",
    "iter_batches",
    "make_loss",
    "resolve_task",
]

Kind = Literal["multiclass", "binary", "multilabel", "regression"]


@dataclass(frozen=True)
class TaskSpec:
    """What the model's output means, and so which loss and metrics apply."""

    kind: Kind
    loss: str
    num_outputs: int
    num_classes: int | None = None

    @property
    def task(self) -> str:
        """`classification` or `regression`, the config's words."""
        return "regression" if self.kind == "regression" else "classification"


def resolve_task(
    *, task: str, loss: str | None, output_shape: tuple[int, ...], y: torch.Tensor, info: Any
) -> TaskSpec:
    """Decide the task kind from the config, the dataset info and the model's output shape."""
    if task == "auto":
        task = getattr(info, "task", None) or (
            "classification" if not torch.is_floating_point(y) else "regression"
        )
        if task not in ("classification", "regression"):
            task = "classification" if not torch.is_floating_point(y) else "regression"
    if loss is None:
        loss = "cross_entropy" if task == "classification" else "mse"
    num_outputs = 1
    for size in output_shape:
        num_outputs *= int(size)
    if task == "regression":
        if loss in ("cross_entropy", "bce_with_logits"):
            raise TrainingError(f"loss {loss!r} is for classification, but the task is regression")
        return TaskSpec("regression", loss, num_outputs)
    if loss not in ("cross_entropy", "bce_with_logits"):
        raise TrainingError(f"loss {loss!r} is for regression, but the task is classification")
    num_classes = getattr(info, "num_classes", None)
    if loss == "bce_with_logits":
        if num_outputs == 1:
            return TaskSpec("binary", loss, 1, 2)
        return TaskSpec("multilabel", loss, num_outputs, num_outputs)
    if len(output_shape) != 1:
        raise TrainingError(
            f"classification needs the model output to be a vector of class scores; "
            f"it has shape {list(output_shape)}"
        )
    if num_classes is not None and int(num_classes) != num_outputs:
        raise TrainingError(
            f"the dataset has {num_classes} classes but the model outputs {num_outputs} "
            f"values; set the last layer's size to {num_classes}"
        )
    if num_outputs < 2:
        raise TrainingError(
            "cross_entropy needs at least 2 outputs; use bce_with_logits for one output"
        )
    return TaskSpec("multiclass", loss, num_outputs, num_outputs)


def adapt_target(task: TaskSpec, output: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Give the target the dtype and shape the loss expects for this output."""
    if task.kind == "multiclass":
        return y.long().view(-1) if y.dim() > 1 and y.shape[1:].numel() == 1 else y.long()
    y = y.to(output.dtype)
    if y.shape != output.shape and y.numel() == output.numel():
        y = y.view(output.shape)
    return y


def make_loss(
    task: TaskSpec, *, label_smoothing: float = 0.0, weight: torch.Tensor | None = None
) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The mean-reduced loss function `(output, target) -> scalar`.

    `label_smoothing` and class `weight` (cross-entropy only) shape the training loss; the
    evaluation passes use the plain loss, so val/loss compares across runs.
    """
    if task.loss == "cross_entropy":
        if label_smoothing or weight is not None:
            return functools.partial(F.cross_entropy, weight=weight, label_smoothing=label_smoothing)
        return F.cross_entropy
    if task.loss == "bce_with_logits":
        return F.binary_cross_entropy_with_logits
    if task.loss == "mse":
        return F.mse_loss
    if task.loss == "l1":
        return F.l1_loss
    if task.loss == "huber":
        return F.huber_loss
    raise TrainingError(f"unknown loss {task.loss!r}")


def _predictions(task: TaskSpec, out: torch.Tensor) -> torch.Tensor:
    """What the metrics compare with the target: class ids, 0/1 labels or the raw values."""
    if task.kind == "multiclass":
        return out.argmax(dim=1)
    if task.kind in ("binary", "multilabel"):
        return (out > 0).long()
    return out


def multiclass_confusion_matrix(preds: torch.Tensor, target: torch.Tensor, n: int) -> torch.Tensor:
    """(true, predicted) counts of class ids, as torchmetrics' own update computes it."""
    return torch.bincount(target.long() * n + preds.long(), minlength=n * n).reshape(n, n)


def _compute(task: TaskSpec, preds: torch.Tensor, target: torch.Tensor) -> dict[str, Any]:
    """Metrics over a whole split at once (torchmetrics' functional ones beyond multiclass)."""
    n = task.num_classes or 2
    if task.kind == "multiclass":
        # One pass builds the confusion matrix; accuracy and macro F1 follow from it exactly as
        # torchmetrics computes them (classes never seen nor predicted are left out of the mean).
        # The matrix is one bincount: importing torchmetrics for it would cost a process about
        # a second (it imports scipy.signal and matplotlib), more than 60 epochs of evaluation.
        matrix = multiclass_confusion_matrix(preds, target, n)
        # The matrix is read back for the result anyway; the rest is a few Python sums over it,
        # cheaper than a dozen small tensor ops (this runs once per epoch).
        rows: list[list[int]] = matrix.tolist()
        tp = [rows[i][i] for i in range(n)]
        predicted = [sum(col) for col in zip(*rows, strict=True)]
        actual = [sum(row) for row in rows]
        f1_sum, seen = 0.0, 0
        for t, p, a in zip(tp, predicted, actual, strict=True):
            if p + a > 0:  # 2tp + fp + fn
                f1_sum += 2 * t / (p + a)
                seen += 1
        return {
            "accuracy": sum(tp) / max(sum(actual), 1),
            "f1": f1_sum / max(seen, 1),
            "confusion_matrix": rows,
        }
    from torchmetrics.functional import classification as tmf
    from torchmetrics.functional import regression as tmr

    # Argument checks would scan the tensors again (and sync on a GPU); ours are well formed.
    kw: dict[str, Any] = {"validate_args": False}
    if task.kind == "binary":
        preds, target = preds.view(-1), target.long().view(-1)
        return {
            "accuracy": tmf.binary_accuracy(preds, target, **kw),
            "f1": tmf.binary_f1_score(preds, target, **kw),
            "confusion_matrix": tmf.binary_confusion_matrix(preds, target, **kw),
        }
    if task.kind == "multilabel":
        target = target.long()
        return {
            "accuracy": tmf.multilabel_accuracy(preds, target, n, **kw),
            "f1": tmf.multilabel_f1_score(preds, target, n, average="macro", **kw),
        }
    # R2Score wants (N,) or (N, k).
    preds, target = preds.reshape(preds.shape[0], -1), target.reshape(target.shape[0], -1)
    if preds.shape[1] == 1:
        preds, target = preds.view(-1), target.view(-1)
    result = {
        "mae": tmr.mean_absolute_error(preds, target),
        "rmse": tmr.mean_squared_error(preds, target, squared=False),
    }
    if preds.shape[0] >= 2:  # R^2 is undefined for a single sample
        result["r2"] = tmr.r2_score(preds, target, multioutput="uniform_average")
    return result


def iter_batches(
    data: Any,
    batch_size: int,
    *,
    shuffle: bool,
    generator: torch.Generator | None = None,
    augment: bool = False,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Batches of `(x, y)` from a TensorSet (its own `batches`) or anything with `.x`/`.y`.

    `augment` asks the data layer for its training-time augmentation (train split only).
    """
    if hasattr(data, "batches"):
        # Handed back as is: one generator layer fewer on every training step.
        return data.batches(batch_size, shuffle=shuffle, generator=generator, augment=augment)
    return _index_batches(data, batch_size, shuffle, generator)


def _index_batches(
    data: Any, batch_size: int, shuffle: bool, generator: torch.Generator | None
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    x, y = data.x, data.y
    n = len(x)
    order = torch.randperm(n, generator=generator) if shuffle else None
    for start in range(0, n, batch_size):
        if order is None:
            yield x[start : start + batch_size], y[start : start + batch_size]
        else:
            idx = order[start : start + batch_size]
            yield x[idx], y[idx]


def float_metrics(values: Mapping[str, Any]) -> dict[str, float]:
    """The scalar metrics of `values` as floats (confusion matrices and the like left out)."""
    return {
        k: float(v) for k, v in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }


def dataset_len(data: Any) -> int:
    """Number of samples in a split."""
    try:
        return len(data)
    except TypeError:
        return len(data.x)


@torch.no_grad()
def evaluate(
    model: torch.nn.Module,
    data: Any,
    task: TaskSpec,
    *,
    prefix: str,
    batch_size: int,
    device: torch.device,
    autocast: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
    ranks: Any = None,
) -> dict[str, Any]:
    """Loss and task metrics over a whole split.

    Batches only keep their predictions; the metrics are computed once at the end, so a pass
    costs one forward per batch plus a few whole-split reductions.

    `ranks` (engine.train.ranks.Ranks, a multi-process run): each rank evaluates its rows
    `rank::world` of the split, then the loss sums are all-reduced and the predictions gathered,
    so every rank computes the metrics of the whole split.
    """
    shard = ranks.shard_split(data) if ranks is not None else None
    if shard is not None:
        data = shard
    loss_fn = make_loss(task)
    was_training = model.training
    model.eval()
    # Per-batch mean losses stay on the device and are read back together at the end.
    losses: list[torch.Tensor] = []
    sizes: list[int] = []
    preds: list[torch.Tensor] = []
    targets: list[torch.Tensor] = []
    on_cpu = device.type == "cpu"
    try:
        for x, y in iter_batches(data, batch_size, shuffle=False):
            if not (on_cpu and x.device.type == "cpu" and y.device.type == "cpu"):
                x = x.to(device, non_blocking=True)
                y = y.to(device, non_blocking=True)
            with autocast():
                out = model(x)
            out = out.float()
            target = adapt_target(task, out, y)
            losses.append(loss_fn(out, target))
            sizes.append(x.shape[0])
            preds.append(_predictions(task, out))
            targets.append(target)
    finally:
        model.train(was_training)
    if not preds:
        return {}
    count = sum(sizes)
    # Weighted by batch size and summed in double precision, in batch order.
    total = 0.0
    # One read for all batches on a device; on the CPU a read is no sync, so no stack kernel.
    means = [t.item() for t in losses] if on_cpu else torch.stack(losses).tolist()
    for mean, size in zip(means, sizes, strict=True):
        total += mean * size
    pred = preds[0] if len(preds) == 1 else torch.cat(preds)
    target = targets[0] if len(targets) == 1 else torch.cat(targets)
    if shard is not None:  # every rank's rows: the whole split
        total, count = ranks.sum_values([total, float(count)])
        pred, target = ranks.gather_rows(pred), ranks.gather_rows(target)
    result: dict[str, Any] = {f"{prefix}/loss": total / count}
    for name, value in _compute(task, pred, target).items():
        if name == "confusion_matrix":
            matrix = value if isinstance(value, list) else value.long().cpu().tolist()
            result[f"{prefix}/{name}"] = matrix
        else:
            result[f"{prefix}/{name}"] = float(value)
    return result
