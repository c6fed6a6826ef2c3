"""Training configuration: one pydantic model, every field defaulted."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

__all__ = [
    "TrainConfig",
    "OptimizerConfig",
    "SchedulerConfig",
    "EarlyStoppingConfig",
    "BestConfig",
    "ConfigError",
    "parse_config",
    "default_loss",
]

Task = Literal["auto", "classification", "regression"]
LossName = Literal["cross_entropy", "mse", "l1", "huber", "bce_with_logits"]
Precision = Literal["fp32", "bf16", "fp16"]
# How the ranks of a multi-process run share the model: each holds all of it and averages the
# gradients (DistributedDataParallel), or each holds a shard of every parameter, gradient and
# optimizer state (FSDP2's fully_shard), for models that do not fit one device.
Strategy = Literal["ddp", "fsdp"]

_CLASSIFICATION_LOSSES = {"cross_entropy", "bce_with_logits"}
_UNION_MEMBER = re.compile(r"[\[\]']")
ClassWeights = Literal["balanced"] | Annotated[list[Annotated[float, Field(ge=0)]], Field(min_length=2)]


MAX_EPOCHS = 100_000  # the most epochs one run may train

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class OptimizerConfig(_Strict):
    """Optimizer choice and its hyper-parameters (unused ones are ignored by that optimizer)."""

    name: Literal["sgd", "adam", "adamw", "rmsprop"] = "adam"
    lr: Annotated[float, Field(gt=0, le=10)] = 1e-3
    weight_decay: Annotated[float, Field(ge=0, le=1)] = 0.0
    momentum: Annotated[float, Field(ge=0, lt=1)] = 0.9
    nesterov: bool = False
    betas: tuple[Annotated[float, Field(ge=0, lt=1)], Annotated[float, Field(ge=0, lt=1)]] = (
        0.9,
        0.999,
    )

    @model_validator(mode="after")
    def _nesterov_needs_momentum(self) -> OptimizerConfig:
        if self.nesterov and (self.name != "sgd" or self.momentum == 0):
            raise ValueError("nesterov needs optimizer 'sgd' with momentum > 0")
        return self


class SchedulerConfig(_Strict):
    """Learning-rate schedule. `step`/`plateau` act per epoch, `cosine`/`onecycle` per step."""

    name: Literal["none", "step", "cosine", "onecycle", "plateau"] = "none"
    # step
    step_size: Annotated[int, Field(ge=1)] = 10
    gamma: Annotated[float, Field(gt=0, le=1)] = 0.1
    # cosine
    eta_min: Annotated[float, Field(ge=0)] = 0.0
    # onecycle (max_lr defaults to optimizer.lr)
    max_lr: Annotated[float, Field(gt=0)] | None = None
    pct_start: Annotated[float, Field(gt=0, lt=1)] = 0.3
    # plateau
    factor: Annotated[float, Field(gt=0, lt=1)] = 0.1
    patience: Annotated[int, Field(ge=0)] = 5
    metric: str = "val/loss"
    mode: Literal["min", "max"] = "min"
    # linear warm-up over the first optimizer steps, before (and composed with) the schedule
    warmup_steps: Annotated[int, Field(ge=0, le=10_000_000)] = 0

    @field_validator("warmup_steps")
    @classmethod
    def _onecycle_warms_up_itself(cls, value: int, info: ValidationInfo) -> int:
        if value and info.data.get("name") == "onecycle":
            raise ValueError("onecycle warms up by itself (pct_start); leave warmup_steps at 0")
        return value


class EarlyStoppingConfig(_Strict):
    """Stop when a validation metric has not improved for `patience` epochs."""

    metric: str = "val/loss"
    mode: Literal["min", "max"] = "min"
    patience: Annotated[int, Field(ge=1)] = 5
    min_delta: Annotated[float, Field(ge=0)] = 0.0


class BestConfig(_Strict):
    """Which epoch's weights are the run's `best` checkpoint (and so its default export)."""

    metric: str = "val/loss"
    mode: Literal["min", "max"] = "min"

    @field_validator("metric")
    @classmethod
    def _validation_metric(cls, value: str) -> str:
        if not value.startswith("val/"):
            raise ValueError(f"the best checkpoint is chosen by a validation metric (val/...), not {value!r}")
        return value


class TrainConfig(_Strict):
    """Everything a run needs besides the graph and the data; `{"epochs": 5}` is a whole config."""

    task: Task = "auto"
    loss: LossName | None = None  # None: cross_entropy for classification, mse for regression
    optimizer: OptimizerConfig = Field(default_factory=OptimizerConfig)
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    epochs: Annotated[int, Field(ge=1, le=MAX_EPOCHS)] = 10
    batch_size: Annotated[int, Field(ge=1, le=1_048_576)] = 32
    eval_batch_size: Annotated[int, Field(ge=1, le=1_048_576)] | None = None
    grad_clip: Annotated[float, Field(gt=0)] | None = None
    seed: Annotated[int, Field(ge=0, lt=2**63)] = 0
    # Deterministic kernels only (torch.use_deterministic_algorithms; on CUDA also cuBLAS's fixed
    # workspace and no cuDNN autotuning): a CUDA run repeats bit for bit, a little slower, and an
    # op with no deterministic kernel fails the run naming it. CPU training is deterministic without it.
    deterministic: bool = False
    precision: Precision = "fp32"
    compile: bool = False
    device: str = "auto"
    # Machines (Kubernetes pods) of a run, each starting `processes` ranks: the run's world is
    # nodes x processes. More than one node needs a launcher across machines (torchrun in an
    # indexed Job: webapp/runs/scheduling/kubernetes.py); one node is the worker's own launcher.
    nodes: Annotated[int, Field(ge=1, le=64)] = 1
    # Ranks of a DistributedDataParallel run on each node (engine.train.distributed launches them);
    # the global batch stays batch_size, each rank taking batch_size / world rows of it.
    processes: Annotated[int, Field(ge=1, le=8, validate_default=True)] = 1
    strategy: Strategy = "ddp"
    early_stopping: EarlyStoppingConfig | None = None
    checkpoint_every: Annotated[int, Field(ge=1)] = 1
    keep_checkpoints: Annotated[int, Field(ge=1)] = 3
    log_every: Annotated[int, Field(ge=1)] = 10
    max_steps: Annotated[int, Field(ge=1)] | None = None
    # None: early_stopping's metric and mode when it is set, else val/loss (min)
    best: BestConfig | None = None
    grad_accumulation: Annotated[int, Field(ge=1, le=4096)] = 1
    label_smoothing: Annotated[float, Field(ge=0, lt=1)] = 0.0
    class_weights: ClassWeights | None = None
    freeze: list[str] = Field(default_factory=list, max_length=10_000)

    @property
    def world(self) -> int:
        """Ranks of the run in all: nodes x processes."""
        return self.nodes * self.processes

    @property
    def best_policy(self) -> BestConfig:
        """The metric and mode that choose the best checkpoint (`best`, or its default)."""
        if self.best is not None:
            return self.best
        if self.early_stopping is not None:
            return BestConfig(metric=self.early_stopping.metric, mode=self.early_stopping.mode)
        return BestConfig()

    @field_validator("label_smoothing", "class_weights")
    @classmethod
    def _cross_entropy_only(cls, value: Any, info: ValidationInfo) -> Any:
        if not value:
            return value
        loss, task = info.data.get("loss"), info.data.get("task")
        if task == "regression" or (loss is not None and loss != "cross_entropy"):
            raise ValueError(
                f"{info.field_name} applies to classification with the cross_entropy loss, "
                f"not to loss {loss or default_loss('regression')!r}"
                + (" (task 'regression')" if task == "regression" else "")
            )
        return value

    @field_validator("freeze")
    @classmethod
    def _node_ids(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(node.strip() for node in value if node.strip()))

    @field_validator("device")
    @classmethod
    def _device_name(cls, value: str) -> str:
        if value in ("auto", "cpu", "cuda") or re.fullmatch(r"cuda:\d+", value):
            return value
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', not {value!r}")

    @field_validator("processes")
    @classmethod
    def _batch_splits_over_processes(cls, value: int, info: ValidationInfo) -> int:
        batch_size, device = info.data.get("batch_size"), info.data.get("device")
        nodes = info.data.get("nodes") or 1
        world = value * nodes
        ranks = f"{value} processes" if nodes == 1 else f"{nodes} nodes x {value} processes"
        if world > 1 and batch_size is not None and batch_size % world:
            raise ValueError(
                f"batch_size {batch_size} does not split over {ranks}: the global batch "
                f"is shared out evenly, so batch_size must be a multiple of {world}"
            )
        if world > 1 and device is not None and device.startswith("cuda:"):
            raise ValueError(
                f"with {ranks} each rank takes its own GPU (cuda:LOCAL_RANK); "
                f"use device 'cuda', 'auto' or 'cpu', not {device!r}"
            )
        return value

    @field_validator("strategy")
    @classmethod
    def _sharding_needs_processes(cls, value: str, info: ValidationInfo) -> str:
        processes = info.data.get("processes")
        if value == "fsdp" and processes is not None and processes * (info.data.get("nodes") or 1) < 2:
            raise ValueError(
                f"strategy 'fsdp' shards the model over the run's processes: set processes to 2 or "
                f"more (it is {processes}), or use strategy 'ddp'"
            )
        return value

    @model_validator(mode="after")
    def _loss_matches_task(self) -> TrainConfig:
        if self.loss is None or self.task == "auto":
            return self
        if self.task == "regression" and self.loss in _CLASSIFICATION_LOSSES:
            raise ValueError(f"loss {self.loss!r} is for classification, but task is 'regression'")
        if self.task == "classification" and self.loss not in _CLASSIFICATION_LOSSES:
            raise ValueError(f"loss {self.loss!r} is for regression, but task is 'classification'")
        return self


def default_loss(task: str) -> str:
    """The loss used when the config does not name one."""
    return "cross_entropy" if task == "classification" else "mse"


class ConfigError(ValueError):
    """A training config that does not validate; `problems` lists `{field, message}`."""

    def __init__(self, message: str, problems: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


def parse_config(obj: Any) -> TrainConfig:
    """Validate a dict, JSON text or TrainConfig; raise ConfigError naming each bad field."""
    if isinstance(obj, TrainConfig):
        return obj
    try:
        if isinstance(obj, (str, bytes)):
            return TrainConfig.model_validate_json(obj)
        return TrainConfig.model_validate(obj if obj is not None else {})
    except ValidationError as exc:
        problems: list[dict[str, str]] = []
        for err in exc.errors():
            # Union members add their type to the location (`class_weights.literal['balanced']`):
            # the field is what the user wrote; the members' messages are joined.
            loc = [str(p) for p in err["loc"] if not _UNION_MEMBER.search(str(p))]
            name = ".".join(loc) or "config"
            same = next((p for p in problems if p["field"] == name), None)
            if same is not None and name != "config":
                same["message"] += f" or {err['msg'][0].lower()}{err['msg'][1:]}"
            else:
                problems.append({"field": name, "message": err["msg"]})
        text = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        raise ConfigError(f"invalid training config: {text}", problems) from None
