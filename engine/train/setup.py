"""Before the first step: the model on its device, the data checked against the graph, the task."""

from __future__ import annotations

import json
import math
import os
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from engine.train.config import TrainConfig
from engine.train.errors import TrainingError
from engine.train.metrics import TaskSpec, dataset_len, iter_batches, resolve_task
from engine.train.precision import Precision

__all__ = [
    "RunSize",
    "check_single_output",
    "class_weights",
    "freeze_nodes",
    "prepare_model",
    "probe_task",
    "seed_everything",
    "set_determinism",
    "spec_to_json",
]


def set_determinism(enabled: bool, device: torch.device) -> None:
    """Deterministic kernels on or off for this process's run (config.deterministic).

    Set for every run (on or off), so a worker that trained a deterministic run leaves no switch on
    for the next one. On CUDA cuBLAS needs a fixed workspace (CUBLAS_WORKSPACE_CONFIG) for
    reproducible matrix products, read when its first handle is made: set early, without
    overriding one the operator chose.
    """
    if enabled and device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if enabled or torch.are_deterministic_algorithms_enabled():
        torch.use_deterministic_algorithms(enabled)
    if device.type == "cuda":
        torch.backends.cudnn.deterministic = enabled
        torch.backends.cudnn.benchmark = False if enabled else torch.backends.cudnn.benchmark


def seed_everything(seed: int) -> None:
    """Seed torch, Python and NumPy (the global generators augmentation and dropout draw from)."""
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)


def spec_to_json(spec: Any) -> Any:
    """A spec (GraphSpec, dict or JSON text) as a JSON-able dict; None stays None."""
    if spec is None:
        return None
    if hasattr(spec, "model_dump"):
        return spec.model_dump(mode="json", exclude_none=True)
    if isinstance(spec, (str, bytes)):
        return json.loads(spec)
    return spec


def prepare_model(
    spec: Any, model: torch.nn.Module | None, seed: int, device: torch.device
) -> tuple[Any, torch.nn.Module]:
    """The parsed spec and the model on `device`: `model` as given, or `build(spec, seed)`.

    Training randomness (dropout, augmentation) then starts from the seed, whatever building drew.
    """
    if spec is not None and not hasattr(spec, "inputs"):
        from engine.spec import parse_spec

        spec = parse_spec(spec)
    seed_everything(seed)
    if model is None:
        if spec is None:
            raise TrainingError("train() needs a spec or a model")
        from engine.build import build

        model = build(spec, seed=seed)
    model = model.to(device)
    seed_everything(seed)
    return spec, model


def check_single_output(out: Any) -> torch.Tensor:
    """The model's output tensor; TrainingError when the graph has several outputs."""
    if isinstance(out, torch.Tensor):
        return out
    raise TrainingError(
        f"training needs a graph with exactly one output; this one returns {len(out)} outputs"
    )


def check_data_fits(spec: Any, x: torch.Tensor) -> None:
    """The dataset's sample shape and dtype must be what the graph's input declares."""
    if len(spec.inputs) != 1:
        raise TrainingError(
            f"training needs a graph with exactly one input; this one has {len(spec.inputs)} "
            f"({', '.join(i.id for i in spec.inputs)})"
        )
    inp = spec.inputs[0]
    if list(x.shape[1:]) != list(inp.shape):
        raise TrainingError(
            f"the data has samples of shape {list(x.shape[1:])} but the graph input "
            f"{inp.id!r} is {list(inp.shape)}"
        )
    if (inp.dtype == "int64") != (not torch.is_floating_point(x)):
        raise TrainingError(
            f"the data holds {str(x.dtype).removeprefix('torch.')} values but the graph input "
            f"{inp.id!r} is {inp.dtype}"
        )


def probe_task(
    spec: Any, model: torch.nn.Module, splits: Any, cfg: TrainConfig, precision: Precision,
    device: torch.device,
) -> tuple[TaskSpec, torch.Tensor]:
    """Check one training sample against the graph, run it through the model, decide the task.

    Returns the task and the sample's target (its dtype and shape tell the loop what it gets).
    """
    first_x, first_y = next(iter_batches(splits.train, 1, shuffle=False, augment=False))
    if spec is not None:
        check_data_fits(spec, first_x)
    with torch.no_grad():
        was_training = model.training
        model.eval()
        with precision.autocast():
            probe = check_single_output(model(first_x.to(device)))
        model.train(was_training)
    task = resolve_task(
        task=cfg.task, loss=cfg.loss, output_shape=tuple(probe.shape[1:]), y=first_y,
        info=getattr(splits, "info", None),
    )
    return task, first_y


def check_loss_options(cfg: TrainConfig, task: TaskSpec) -> None:
    """label_smoothing and class_weights need cross-entropy over classes (the task as resolved)."""
    for name, value in (("label_smoothing", cfg.label_smoothing), ("class_weights", cfg.class_weights)):
        if value and task.kind != "multiclass":
            raise TrainingError(
                f"{name} applies to classification with the cross_entropy loss; this run is "
                f"{task.task} with loss {task.loss!r}",
                field=name,
            )


def class_weights(cfg: TrainConfig, task: TaskSpec, train_set: Any, device: torch.device) -> torch.Tensor | None:
    """The per-class weights of the training loss: None, the config's list, or "balanced".

    "balanced" gives class c the weight n / (k * count_c) over the training split's labels (as
    scikit-learn's compute_class_weight); a class absent from the split gets 0 (it never
    weighs a training sample). A list must have one weight per class.
    """
    check_loss_options(cfg, task)
    if cfg.class_weights is None:
        return None
    k = int(task.num_classes or task.num_outputs)
    if cfg.class_weights == "balanced":
        labels = torch.as_tensor(train_set.y).reshape(-1).long()
        counts = torch.bincount(labels, minlength=k)[:k].double()
        weights = torch.where(counts > 0, labels.numel() / (k * counts.clamp(min=1)), 0.0)
        return weights.float().to(device)
    if len(cfg.class_weights) != k:
        raise TrainingError(
            f"class_weights has {len(cfg.class_weights)} weights but there are {k} classes",
            field="class_weights",
        )
    if not any(cfg.class_weights):
        raise TrainingError("class_weights are all 0: no sample would count", field="class_weights")
    return torch.tensor(cfg.class_weights, dtype=torch.float32, device=device)


def freeze_nodes(model: torch.nn.Module, spec: Any, nodes: list[str]) -> list[str]:
    """Stop the parameters of `nodes` from training (requires_grad False); their names.

    A parameter belongs to the node named by the part of its name before the first ".". A
    node that is not in the graph is a TrainingError (field "freeze") naming it.
    """
    if not nodes:
        return []
    names = [name for name, _ in model.named_parameters()]
    known = {n.id for n in spec.nodes} if spec is not None else {n.split(".")[0] for n in names}
    unknown = [node for node in nodes if node not in known]
    if unknown:
        raise TrainingError(
            f"freeze names {', '.join(map(repr, unknown))}, which {'is' if len(unknown) == 1 else 'are'} "
            f"not a node of this graph; nodes: {', '.join(sorted(known))}",
            field="freeze",
        )
    chosen = set(nodes)
    frozen = []
    for name, param in model.named_parameters():
        if name.split(".")[0] in chosen:
            param.requires_grad_(False)
            frozen.append(name)
    if len(frozen) == len(names):
        raise TrainingError("freeze leaves no parameter to train", field="freeze")
    return frozen


@dataclass(frozen=True)
class RunSize:
    """How long a run is: rows, steps per epoch, total steps, and the batch sizes.

    Steps are optimizer steps: with `grad_accumulation` k, a step takes k micro-batches of
    `batch_size` rows (the epoch's last step takes what is left).
    """

    train_rows: int
    batch_size: int
    eval_batch_size: int
    steps_per_epoch: int
    total_steps: int
    micro_batches_per_epoch: int = 0
    grad_accumulation: int = 1

    @classmethod
    def of(cls, splits: Any, cfg: TrainConfig) -> RunSize:
        """The size of training `splits.train` under `cfg`; TrainingError when it is empty."""
        rows = dataset_len(splits.train)
        if rows == 0:
            raise TrainingError("the training split is empty")
        micro = math.ceil(rows / cfg.batch_size)
        steps_per_epoch = math.ceil(micro / cfg.grad_accumulation)
        total = cfg.epochs * steps_per_epoch
        if cfg.max_steps is not None:
            total = min(total, cfg.max_steps)
        return cls(
            train_rows=rows,
            batch_size=cfg.batch_size,
            eval_batch_size=cfg.eval_batch_size or max(cfg.batch_size, 256),
            steps_per_epoch=steps_per_epoch,
            total_steps=total,
            micro_batches_per_epoch=micro,
            grad_accumulation=cfg.grad_accumulation,
        )
