"""The learning-rate schedule and when it steps: per step (cosine, one-cycle) or per epoch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from engine.train.config import TrainConfig
from engine.train.errors import TrainingError
from engine.train.metrics import float_metrics

__all__ = ["Schedule"]


def _make_scheduler(optimizer: torch.optim.Optimizer, cfg: TrainConfig, total_steps: int) -> Any:
    s = cfg.scheduler
    sched = torch.optim.lr_scheduler
    if s.name == "step":
        return sched.StepLR(optimizer, step_size=s.step_size, gamma=s.gamma)
    if s.name == "cosine":
        return sched.CosineAnnealingLR(optimizer, T_max=max(total_steps, 1), eta_min=s.eta_min)
    if s.name == "onecycle":
        return sched.OneCycleLR(
            optimizer,
            max_lr=s.max_lr or cfg.optimizer.lr,
            total_steps=max(total_steps, 2),
            pct_start=s.pct_start,
            cycle_momentum=cfg.optimizer.name in ("sgd", "rmsprop", "adam", "adamw"),
        )
    if s.name == "plateau":
        return sched.ReduceLROnPlateau(optimizer, mode=s.mode, factor=s.factor, patience=s.patience)
    return None


class Schedule:
    """The config's LR scheduler (or none), stepped by the loop at the right moments.

    `step_after_batch` is the scheduler's own `step` for per-step schedules and None otherwise,
    so the loop calls it without asking which kind it has.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, cfg: TrainConfig, total_steps: int) -> None:
        self.name = cfg.scheduler.name
        self.metric = cfg.scheduler.metric
        self.scheduler = _make_scheduler(optimizer, cfg, total_steps)
        per_step = self.name in ("cosine", "onecycle")
        self.step_after_batch = self.scheduler.step if per_step else None

    def after_epoch(self, val_metrics: Mapping[str, Any]) -> None:
        """Step a per-epoch schedule; `plateau` reads its metric from the validation pass."""
        if self.name == "step":
            self.scheduler.step()
        elif self.name == "plateau" and val_metrics:
            if self.metric not in val_metrics:
                raise TrainingError(
                    f"scheduler.metric {self.metric!r} is not a validation metric; "
                    f"choose one of {', '.join(sorted(float_metrics(val_metrics)))}",
                    field="scheduler.metric",
                )
            self.scheduler.step(val_metrics[self.metric])

    def state_dict(self) -> dict[str, Any] | None:
        """The scheduler's state for a checkpoint (None without a scheduler)."""
        return self.scheduler.state_dict() if self.scheduler is not None else None

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """Restore what `state_dict` gave (a checkpoint without one leaves it fresh)."""
        if self.scheduler is not None and state is not None:
            self.scheduler.load_state_dict(state)
