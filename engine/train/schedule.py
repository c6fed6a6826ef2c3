"""The learning-rate schedule and when it steps: per step (cosine, one-cycle) or per epoch.

`scheduler.warmup_steps` N adds a linear warm-up over the first N optimizer steps, from
1/(N+1) of the rate up to the full rate (no step is taken at rate 0):

- none: torch's LinearLR alone, stepped per step;
- cosine: SequentialLR(LinearLR for N steps, then CosineAnnealingLR over the remaining steps);
- step, plateau: a LinearLR stepped per step for N steps, beside the per-epoch scheduler; both
  scale the current rate, so the rate is base x warm-up factor x the schedule's own factor;
- onecycle warms up by itself (the config refuses warmup_steps with it).

All of it is torch schedulers, so a checkpoint holds their state and a resume goes on exactly.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import torch

from engine.train.config import TrainConfig
from engine.train.errors import TrainingError
from engine.train.metrics import float_metrics

__all__ = ["Schedule"]

# The per-step schedules whose shape depends on the run's total number of steps.
HORIZON_SCHEDULES = ("cosine", "onecycle")


def _warmup(optimizer: torch.optim.Optimizer, steps: int) -> torch.optim.lr_scheduler.LinearLR:
    return torch.optim.lr_scheduler.LinearLR(
        optimizer, start_factor=1.0 / (steps + 1), end_factor=1.0, total_iters=steps
    )


def _make_scheduler(optimizer: torch.optim.Optimizer, cfg: TrainConfig, total_steps: int) -> Any:
    s = cfg.scheduler
    sched = torch.optim.lr_scheduler
    warmup = s.warmup_steps
    if s.name == "step":
        return sched.StepLR(optimizer, step_size=s.step_size, gamma=s.gamma)
    if s.name == "cosine":
        if warmup:
            first = _warmup(optimizer, warmup)
            cosine = sched.CosineAnnealingLR(optimizer, T_max=max(total_steps - warmup, 1), eta_min=s.eta_min)
            return sched.SequentialLR(optimizer, [first, cosine], milestones=[warmup])
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
    if warmup:
        return _warmup(optimizer, warmup)
    return None


def _horizon(state: Any) -> Any:
    """The total steps a scheduler state is laid out over (cosine's T_max, one-cycle's total)."""
    if not isinstance(state, Mapping):
        return None
    for key in ("T_max", "total_steps"):
        if key in state:
            return state[key]
    for member in state.get("_schedulers", []):  # SequentialLR: warm-up, then cosine
        found = _horizon(member)
        if found is not None:
            return found
    return None


class Schedule:
    """The config's LR scheduler (or none), stepped by the loop at the right moments.

    `step_after_batch` is the function the loop calls after each optimizer step, None when
    nothing steps per step, so the loop calls it without asking which kind it has.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, cfg: TrainConfig, total_steps: int) -> None:
        self.name = cfg.scheduler.name
        self.metric = cfg.scheduler.metric
        self.warmup_steps = cfg.scheduler.warmup_steps
        self.total_steps = total_steps
        self._optimizer, self._cfg = optimizer, cfg
        self.scheduler = _make_scheduler(optimizer, cfg, total_steps)
        # step / plateau with a warm-up: the warm-up is a second scheduler, stepped per step.
        self.warmup = (
            _warmup(optimizer, self.warmup_steps)
            if self.warmup_steps and self.name in ("step", "plateau")
            else None
        )
        self.step_after_batch: Callable[[], None] | None = None
        if self.name in HORIZON_SCHEDULES or (self.name == "none" and self.warmup_steps):
            self.step_after_batch = self.scheduler.step
        elif self.warmup is not None:
            self.step_after_batch = self._step_warmup

    def _step_warmup(self) -> None:
        warmup = self.warmup
        assert warmup is not None
        if warmup.last_epoch < self.warmup_steps:
            warmup.step()

    @property
    def depends_on_total(self) -> bool:
        """Whether the rate at a step depends on the run's total steps (cosine, one-cycle)."""
        return self.name in HORIZON_SCHEDULES

    def same_horizon(self, saved: Mapping[str, Any] | None) -> bool:
        """Whether a saved scheduler state was laid out over as many steps as this one."""
        if saved is None or self.scheduler is None:
            return True
        return _horizon(saved) == _horizon(self.scheduler.state_dict())

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
        """The scheduler's state for a checkpoint (None without a scheduler).

        Without a separate warm-up it is the torch scheduler's own state, as checkpoints
        always held; with one, `{"main": ..., "warmup": ...}`.
        """
        main = self.scheduler.state_dict() if self.scheduler is not None else None
        if self.warmup is None:
            return main
        return {"main": main, "warmup": self.warmup.state_dict()}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """Restore what `state_dict` gave (a checkpoint without one leaves it fresh)."""
        if state is None:
            return
        if self.warmup is not None and "warmup" in state and "main" in state:
            self.warmup.load_state_dict(state["warmup"])
            state = state["main"]
        if self.scheduler is not None and state is not None:
            self.scheduler.load_state_dict(state)

    def continue_at(self, step: int) -> None:
        """Follow this run's own schedule from `step` on, after a resume with another length.

        Cosine and one-cycle are laid out over the run's total steps; a run resumed for more
        (or fewer) epochs restarts its schedule with the new total and replays it up to
        `step`, so from here on the rate is the one a run planned with this length from the
        start has at this step (the restored optimizer keeps its moments).
        """
        for group in self._optimizer.param_groups:
            group["lr"] = group.get("initial_lr", group["lr"])
            group.pop("initial_lr", None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "lr_scheduler.step() before optimizer.step()"
            self.scheduler = _make_scheduler(self._optimizer, self._cfg, self.total_steps)
            self.step_after_batch = self.scheduler.step
            limit = self.total_steps if self.name == "onecycle" else step
            for _ in range(min(step, limit)):
                self.scheduler.step()
