"""A run's state as the hooks see it (TrainState), its latest metrics, and its TrainResult.

InitPlan (what `engine.train.finetune` loads from a checkpoint) lives here because TrainResult
carries it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from engine.train.config import TrainConfig

__all__ = ["InitPlan", "LastMetrics", "TrainResult", "TrainState"]


@dataclass
class TrainState:
    """What the hooks see: counters, the live model and optimizer, the latest metrics."""

    config: TrainConfig
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    epochs: int
    steps_per_epoch: int
    total_steps: int
    device: str
    epoch: int = 0  # completed epochs
    step: int = 0  # completed optimizer steps
    batch_in_epoch: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)
    status: str = "running"

    @property
    def epoch_progress(self) -> float:
        """Fractional epoch, as the sink and the charts use it."""
        return self.epoch + self.batch_in_epoch / max(self.steps_per_epoch, 1)


@dataclass
class LastMetrics:
    """The latest train window and validation pass: the result's metrics, kept in checkpoints."""

    train: dict[str, float] = field(default_factory=dict)
    val: dict[str, Any] = field(default_factory=dict)


@dataclass
class InitPlan:
    """Which tensors of a checkpoint a graph takes (same name and shape), and which not.

    `loaded`: names of the state-dict tensors copied from the checkpoint; `mismatched`: same
    name, other shape (`{node, parameter, checkpoint_shape, graph_shape}`); `new`: in the graph
    only (`{node, parameter, shape}`, freshly initialised); `unused`: in the checkpoint only.
    `parameter` is the full tensor name (`fc1.weight`), `node` its part before the first ".".
    Buffers (BatchNorm's running statistics) count as tensors like the parameters.
    """

    loaded: list[str] = field(default_factory=list)
    mismatched: list[dict[str, Any]] = field(default_factory=list)
    new: list[dict[str, Any]] = field(default_factory=list)
    unused: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON (the REST API serves it as is)."""
        return {
            "loaded": list(self.loaded),
            "mismatched": [dict(m) for m in self.mismatched],
            "new": [dict(n) for n in self.new],
            "unused": [dict(u) for u in self.unused],
        }


@dataclass
class TrainResult:
    """What a finished (or cancelled, or early-stopped) run gives back."""

    status: str  # "succeeded" | "cancelled" | "stopped_early"
    metrics: dict[str, Any]
    steps: int
    epochs: int
    task: str
    best_checkpoint: Path | None = None
    last_checkpoint: Path | None = None
    out_dir: Path | None = None
    model: torch.nn.Module | None = field(default=None, repr=False)
    init_plan: InitPlan | None = None  # train(init_from=...): what was loaded, what is new

    def to_json(self) -> dict[str, Any]:
        """JSON-able summary (no model)."""
        return {
            "status": self.status,
            "metrics": self.metrics,
            "steps": self.steps,
            "epochs": self.epochs,
            "task": self.task,
            "best_checkpoint": str(self.best_checkpoint) if self.best_checkpoint else None,
            "last_checkpoint": str(self.last_checkpoint) if self.last_checkpoint else None,
            "out_dir": str(self.out_dir) if self.out_dir else None,
            "init_plan": self.init_plan.to_json() if self.init_plan is not None else None,
        }
