"""The trainer's collaborators: callback hooks, the metric sink and the stop check.

TrainState and TrainResult, which the hooks receive, live in `engine.train.state`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from engine.train.state import TrainResult, TrainState

__all__ = [
    "HOOK_NAMES",
    "Callback",
    "CallbackBase",
    "Hooks",
    "MetricSink",
    "StopCheck",
    "TrainState",
    "TqdmProgress",
    "ListSink",
]

StopCheck = Callable[[], bool]

HOOK_NAMES = (
    "on_train_start",
    "on_train_batch_end",
    "on_validation_end",
    "on_checkpoint",
    "on_train_end",
    "on_exception",
)


@runtime_checkable
class Callback(Protocol):
    """Lightning-named hooks; a callback may define any subset of them."""

    def on_train_start(self, state: TrainState) -> None: ...

    def on_train_batch_end(self, state: TrainState, loss: float | None) -> None:
        """`loss` is the mean over the last `log_every` steps, and None between them."""

    def on_validation_end(self, state: TrainState, metrics: Mapping[str, float]) -> None: ...

    def on_checkpoint(self, state: TrainState, path: Path) -> None: ...

    def on_train_end(self, state: TrainState, result: TrainResult) -> None: ...

    def on_exception(self, state: TrainState, exc: BaseException) -> None: ...


class CallbackBase:
    """No-op implementation of every hook, to subclass when only a few are needed."""

    def on_train_start(self, state: TrainState) -> None:
        """Called once before the first step (also when resuming)."""

    def on_train_batch_end(self, state: TrainState, loss: float | None) -> None:
        """Called after every optimizer step."""

    def on_validation_end(self, state: TrainState, metrics: Mapping[str, float]) -> None:
        """Called after each epoch's validation pass."""

    def on_checkpoint(self, state: TrainState, path: Path) -> None:
        """Called after a checkpoint directory is complete on disk."""

    def on_train_end(self, state: TrainState, result: TrainResult) -> None:
        """Called once with the result, whatever the status."""

    def on_exception(self, state: TrainState, exc: BaseException) -> None:
        """Called when training fails, before the exception propagates."""


class Hooks:
    """The callbacks' hooks resolved once, so a step costs one loop over bound methods."""

    def __init__(self, callbacks: Iterable[Callback | Any]) -> None:
        callbacks = list(callbacks)
        self._by_name: dict[str, list[Callable[..., Any]]] = {
            name: [getattr(cb, name) for cb in callbacks if hasattr(cb, name)] for name in HOOK_NAMES
        }

    def __call__(self, name: str, *args: Any) -> None:
        for hook in self._by_name[name]:
            hook(*args)

    def bound(self, name: str) -> list[Callable[..., Any]]:
        """The hooks of one name, for a loop that calls them itself."""
        return self._by_name[name]


@runtime_checkable
class MetricSink(Protocol):
    """Receives metric points; must not block (the worker's sink batches and publishes)."""

    def log(self, step: int, epoch: float, values: dict[str, float]) -> None: ...


class ListSink:
    """A sink that keeps every point in memory (tests, benchmarks, the CLI summary)."""

    def __init__(self) -> None:
        self.points: list[tuple[int, float, dict[str, float]]] = []

    def log(self, step: int, epoch: float, values: dict[str, float]) -> None:
        """Store one point."""
        self.points.append((step, epoch, dict(values)))

    def series(self, key: str) -> list[tuple[int, float]]:
        """All `(step, value)` pairs of one metric."""
        return [(s, v[key]) for s, _, v in self.points if key in v]


class TqdmProgress(CallbackBase):
    """Progress bar for the command line: epoch, step, loss, metrics, samples/s."""

    def __init__(self, **tqdm_kwargs: Any) -> None:
        self._kwargs = tqdm_kwargs
        self._bar: Any = None
        self._postfix: dict[str, str] = {}

    def on_train_start(self, state: TrainState) -> None:
        """Open the bar at the resumed position."""
        from tqdm.auto import tqdm

        self._bar = tqdm(
            total=state.total_steps, initial=state.step, unit="step", dynamic_ncols=True,
            **self._kwargs,
        )
        self._describe(state)

    def _describe(self, state: TrainState) -> None:
        self._bar.set_description(f"epoch {min(state.epoch + 1, state.epochs)}/{state.epochs}")

    def on_train_batch_end(self, state: TrainState, loss: float | None) -> None:
        """Advance one step; refresh the numbers when the trainer has synced them."""
        if self._bar is None:
            return
        self._bar.update(1)
        if loss is not None:
            self._postfix["loss"] = f"{loss:.4g}"
            rate = state.metrics.get("samples_per_s")
            if rate is not None:
                self._postfix["samples/s"] = f"{rate:.0f}"
            self._bar.set_postfix(self._postfix, refresh=False)
        if state.batch_in_epoch == 0:
            self._describe(state)

    def on_validation_end(self, state: TrainState, metrics: Mapping[str, float]) -> None:
        """Show the headline validation numbers."""
        if self._bar is None:
            return
        for key in ("val/loss", "val/accuracy", "val/f1", "val/r2", "val/mae"):
            if key in metrics:
                self._postfix[key] = f"{metrics[key]:.4g}"
        self._bar.set_postfix(self._postfix)
        self._describe(state)

    def on_train_end(self, state: TrainState, result: TrainResult) -> None:
        """Close the bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def on_exception(self, state: TrainState, exc: BaseException) -> None:
        """Close the bar so the error is readable."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
