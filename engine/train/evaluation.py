"""Evaluation during a run: the validation pass after each epoch and the test pass at the end."""

from __future__ import annotations

from typing import Any

import torch

from engine.train.callbacks import Hooks, MetricSink
from engine.train.metrics import TaskSpec, dataset_len, evaluate, float_metrics
from engine.train.precision import AutocastFactory
from engine.train.state import TrainState

__all__ = ["Evaluator"]


class Evaluator:
    """Runs `metrics.evaluate` on a split and reports it to the sink (and the hooks, for val)."""

    def __init__(
        self,
        model: torch.nn.Module,
        task: TaskSpec,
        *,
        batch_size: int,
        device: torch.device,
        autocast: AutocastFactory,
        sink: MetricSink | None,
        hooks: Hooks,
        ranks: Any = None,
    ) -> None:
        self._model, self._task, self._ranks = model, task, ranks
        self._batch_size, self._device, self._autocast = batch_size, device, autocast
        self._sink, self._hooks = sink, hooks

    def _evaluate(self, data: Any, prefix: str) -> dict[str, Any]:
        return evaluate(
            self._model, data, self._task, prefix=prefix, batch_size=self._batch_size,
            device=self._device, autocast=self._autocast, ranks=self._ranks,
        )

    def validate(self, data: Any, state: TrainState) -> dict[str, Any]:
        """`val/*` metrics after an epoch ({} when the split is empty), logged at the epoch."""
        if dataset_len(data) == 0:
            return {}
        metrics = self._evaluate(data, "val")
        state.metrics.update(metrics)
        scalars = float_metrics(metrics)
        if self._sink is not None:
            self._sink.log(state.step, float(state.epoch), scalars)
        self._hooks("on_validation_end", state, scalars)
        return metrics

    def test(self, data: Any, state: TrainState) -> dict[str, Any]:
        """`test/*` metrics at the end of a run ({} when the split is empty)."""
        if dataset_len(data) == 0:
            return {}
        metrics = self._evaluate(data, "test")
        if self._sink is not None:
            self._sink.log(state.step, state.epoch_progress, float_metrics(metrics))
        return metrics
