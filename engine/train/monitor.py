"""A monitored validation metric: its best value, early stopping, the best checkpoint.

A run has two monitors: early stopping's (its own metric, patience) and the best checkpoint's
(`TrainConfig.best_policy`: `best`, or early stopping's metric, or val/loss). They are kept in
state.json's `trainer` as `monitor` and `best`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.train.config import BestConfig, EarlyStoppingConfig
from engine.train.errors import TrainingError
from engine.train.metrics import float_metrics

__all__ = ["Monitor"]


def improved(value: float, best: float | None, mode: str, min_delta: float = 0.0) -> bool:
    """Whether `value` beats `best` by more than `min_delta` (any number beats None or NaN)."""
    if best is None or math.isnan(best):
        return not math.isnan(value)
    return value < best - min_delta if mode == "min" else value > best + min_delta


@dataclass
class Monitor:
    """Best value of one validation metric so far and the epochs since it last improved.

    Without early stopping (`patience` None) it only decides when the best checkpoint is
    written. `to_json`/`load_json` carry the counters through a checkpoint's state.json.
    `field` is the config field a missing metric is reported on.
    """

    metric: str = "val/loss"
    mode: str = "min"
    min_delta: float = 0.0
    patience: int | None = None
    best_value: float | None = None
    bad_epochs: int = 0
    best_checkpoint: str | None = None
    field: str = "early_stopping.metric"

    @classmethod
    def for_config(cls, early_stopping: EarlyStoppingConfig | None) -> Monitor:
        """The monitor of a run: the early-stopping metric, or val/loss (min) without one."""
        if early_stopping is None:
            return cls()
        return cls(
            metric=early_stopping.metric,
            mode=early_stopping.mode,
            min_delta=early_stopping.min_delta,
            patience=early_stopping.patience,
        )

    @classmethod
    def for_best(cls, policy: BestConfig) -> Monitor:
        """The monitor that decides the best checkpoint (never stops a run)."""
        return cls(metric=policy.metric, mode=policy.mode, field="best.metric")

    @property
    def should_stop(self) -> bool:
        """True once the metric has not improved for `patience` epochs."""
        return self.patience is not None and self.bad_epochs >= self.patience

    def update(self, val_metrics: Mapping[str, Any]) -> bool:
        """Count one epoch's validation; True when it is a new best (write the best checkpoint).

        An epoch without validation counts for nothing, unless early stopping needs it.
        """
        if not val_metrics:
            if self.patience is not None:
                raise TrainingError(
                    "early_stopping needs a validation split; set split.val above 0",
                    field="early_stopping",
                )
            return False
        if self.metric not in val_metrics:
            raise TrainingError(
                f"{self.field} {self.metric!r} is not a validation metric; "
                f"choose one of {', '.join(sorted(float_metrics(val_metrics)))}",
                field=self.field,
            )
        value = float(val_metrics[self.metric])
        if improved(value, self.best_value, self.mode, self.min_delta):
            self.best_value = value
            self.bad_epochs = 0
            return True
        self.bad_epochs += 1
        return False

    def to_json(self) -> dict[str, Any]:
        """The counters, for state.json (the settings come from the run's config)."""
        return {
            "metric": self.metric,
            "mode": self.mode,
            "best_value": self.best_value,
            "bad_epochs": self.bad_epochs,
            "best_checkpoint": self.best_checkpoint,
        }

    def load_json(self, trainer_state: Mapping[str, Any]) -> None:
        """Restore the counters from state.json's `trainer` (also the older `book` of it)."""
        saved = trainer_state.get("monitor", trainer_state.get("book", {}))
        self.best_value = saved.get("best_value", self.best_value)
        self.bad_epochs = int(saved.get("bad_epochs", self.bad_epochs))
        self.best_checkpoint = saved.get("best_checkpoint", self.best_checkpoint)

    def load_best_json(self, trainer_state: Mapping[str, Any], *, legacy: bool) -> None:
        """Restore the best checkpoint's monitor from state.json's `trainer.best`.

        Checkpoints from before `best` existed kept it in `monitor` (`legacy`: the run's policy
        is the default one, so that was the same metric). Saved counters of another metric or
        mode are not this policy's: it starts afresh.
        """
        saved = trainer_state.get("best")
        if saved is None and legacy:
            saved = trainer_state.get("monitor", trainer_state.get("book"))
        if not saved:
            return
        if saved.get("metric", self.metric) != self.metric or saved.get("mode", self.mode) != self.mode:
            return
        self.best_value = saved.get("best_value")
        self.best_checkpoint = saved.get("best_checkpoint")
