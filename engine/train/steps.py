"""The training steps of one epoch: the hot loop, and the order its batches come in.

Everything the loop needs is looked up once, in `StepLoop.__init__`; a step is the forward
pass, the loss, one call to the backward step of `precision.backward_step`, the LR schedule
when it steps per batch, the metric window, and the batch-end hooks.

With `grad_accumulation` k > 1 a step is k micro-batches (`_run_accumulating`, a loop of its
own so the k == 1 loop stays as it is): each micro-batch's loss is divided by the number of
micro-batches of its step and backpropagated, then the optimizer steps once; the epoch's last
step takes the micro-batches that are left. A cancel is only taken between steps, so a
checkpoint never holds half a step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from engine.train.callbacks import Hooks, MetricSink, StopCheck
from engine.train.config import TrainConfig
from engine.train.metrics import TaskSpec, adapt_target, iter_batches, make_loss
from engine.train.precision import Precision, accumulating_step, backward_step
from engine.train.ranks import Ranks
from engine.train.schedule import Schedule
from engine.train.setup import check_single_output
from engine.train.state import LastMetrics, TrainState
from engine.train.window import MetricWindow

__all__ = ["StepLoop", "epoch_batches"]

Batches = Iterator[tuple[torch.Tensor, torch.Tensor]]


def epoch_batches(train_set: Any, batch_size: int, generator: torch.Generator, skip: int) -> Batches:
    """An epoch's shuffled, augmented batches, less the first `skip` (done before a resume)."""
    if skip == 0:
        return iter_batches(train_set, batch_size, shuffle=True, generator=generator, augment=True)
    return _resumed_batches(train_set, batch_size, generator, skip)


def _resumed_batches(train_set: Any, batch_size: int, generator: torch.Generator, skip: int) -> Batches:
    # Resuming mid-epoch: redraw the epoch's order and skip what was done. The skipped
    # batches must not run the augmentation (it draws from the global RNG), so this epoch
    # is read without it and augmented here, exactly as TensorSet.batches would.
    transform = getattr(train_set, "transform", None)
    batches = iter_batches(
        train_set, batch_size, shuffle=True, generator=generator, augment=transform is None
    )
    for i, (xb, yb) in enumerate(batches):
        if i < skip:
            continue
        if transform is not None:
            with torch.no_grad():
                xb = transform(xb)
        yield xb, yb


class StepLoop:
    """Runs the steps of an epoch and reports the train window to the sink every `log_every`."""

    def __init__(
        self,
        *,
        model: torch.nn.Module,
        task: TaskSpec,
        first_target: torch.Tensor,
        cfg: TrainConfig,
        precision: Precision,
        optimizer: torch.optim.Optimizer,
        schedule: Schedule,
        window: MetricWindow,
        last: LastMetrics,
        sink: MetricSink | None,
        hooks: Hooks,
        should_stop: StopCheck | None,
        device: torch.device,
        total_steps: int,
        class_weight: torch.Tensor | None = None,
        micro_batches_per_epoch: int = 0,
        ranks: Ranks | None = None,
    ) -> None:
        loss_fn = make_loss(task, label_smoothing=cfg.label_smoothing, weight=class_weight)
        if ranks is not None:  # each rank's share of the global batch's mean loss
            loss_fn = ranks.scaled_loss(loss_fn)
        self._model, self._task, self._loss_fn, self._precision = model, task, loss_fn, precision
        params = [p for group in optimizer.param_groups for p in group["params"]]
        self._backward_step = backward_step(
            optimizer, params, scaler=precision.scaler, grad_clip=cfg.grad_clip
        )
        self._accumulation, self._micro_batches = cfg.grad_accumulation, micro_batches_per_epoch
        self._accumulating_step = accumulating_step(
            optimizer, params, scaler=precision.scaler, grad_clip=cfg.grad_clip
        ) if cfg.grad_accumulation > 1 else None
        self._step_schedule = schedule.step_after_batch
        self._optimizer, self.window, self._last, self._sink = optimizer, window, last, sink
        self._batch_end_hooks, self._should_stop = hooks.bound("on_train_batch_end"), should_stop
        self._device, self._log_every, self._total_steps = device, cfg.log_every, total_steps
        # A 1-D int64 target is what cross-entropy takes as is (adapt_target would return it).
        self._target_as_is = (
            task.kind == "multiclass" and first_target.dim() == 1 and first_target.dtype == torch.int64
        )

    def flush(self, state: TrainState) -> float | None:
        """Read the window, log it (sink, state, last metrics); its mean loss, or None if empty."""
        values = self.window.flush(state.step, float(self._optimizer.param_groups[0]["lr"]))
        if values is None:
            return None
        self._last.train.update(values)
        state.metrics.update(values)
        if self._sink is not None:
            self._sink.log(state.step, state.epoch_progress, values)
        return values["train/loss"]

    def run(self, batches: Batches, state: TrainState) -> str:
        """Step through `batches`: "epoch_end", "cancelled" (should_stop) or "max_steps"."""
        if self._accumulating_step is not None:
            return self._run_accumulating(batches, state)
        # Hot-loop constants, looked up once instead of on every step.
        model, task, loss_fn, autocast = self._model, self._task, self._loss_fn, self._precision.autocast
        mixed, backward_step, step_schedule = self._precision.mixed, self._backward_step, self._step_schedule
        add, hooks, should_stop = self.window.add, self._batch_end_hooks, self._should_stop
        device, to_device = self._device, self._device.type != "cpu"  # CPU batches are in place
        log_every, total_steps, target_as_is = self._log_every, self._total_steps, self._target_as_is
        next_batch = batches.__next__
        while True:
            # Asked before the next batch is drawn: drawing runs the augmentation, which
            # moves the global RNG that a checkpoint taken now must capture untouched.
            if should_stop is not None and should_stop():
                return "cancelled"
            try:
                x, y = next_batch()
            except StopIteration:
                return "epoch_end"
            if to_device:
                x = x.to(device, non_blocking=True)
                y = y.to(device, non_blocking=True)
            if mixed:
                with autocast():
                    out = check_single_output(model(x))
                    target = adapt_target(task, out, y)
                    loss = loss_fn(out, target)
            else:  # the same three lines, without entering a context on every step
                out = check_single_output(model(x))
                target = y if target_as_is else adapt_target(task, out, y)
                loss = loss_fn(out, target)
            backward_step(loss)
            if step_schedule is not None:
                step_schedule()
            state.step += 1
            state.batch_in_epoch += 1
            add(loss, out, target, x.shape[0])
            logged = self.flush(state) if state.step % log_every == 0 else None
            for hook in hooks:
                hook(state, logged)
            if state.step >= total_steps:
                return "max_steps"

    def _run_accumulating(self, batches: Batches, state: TrainState) -> str:
        """`run` with `grad_accumulation` micro-batches per optimizer step."""
        model, task, loss_fn, autocast = self._model, self._task, self._loss_fn, self._precision.autocast
        step_schedule = self._step_schedule
        assert self._accumulating_step is not None
        start, backward, finish = self._accumulating_step
        window, hooks, should_stop = self.window, self._batch_end_hooks, self._should_stop
        device, to_device = self._device, self._device.type != "cpu"
        log_every, total_steps = self._log_every, self._total_steps
        k, micro_batches = self._accumulation, self._micro_batches
        next_batch = batches.__next__
        while True:
            if should_stop is not None and should_stop():
                return "cancelled"
            count = min(k, micro_batches - state.batch_in_epoch * k)
            if count <= 0:
                return "epoch_end"
            start()
            step_loss: torch.Tensor | None = None
            taken = 0
            for _ in range(count):
                try:
                    x, y = next_batch()
                except StopIteration:
                    break
                if to_device:
                    x = x.to(device, non_blocking=True)
                    y = y.to(device, non_blocking=True)
                with autocast():
                    out = check_single_output(model(x))
                    target = adapt_target(task, out, y)
                    loss = loss_fn(out, target)
                backward(loss / count)
                window.add_outputs(out, target, x.shape[0])
                detached = loss.detach()
                step_loss = detached if step_loss is None else step_loss + detached
                taken += 1
            if step_loss is None:
                return "epoch_end"
            finish()
            if step_schedule is not None:
                step_schedule()
            state.step += 1
            state.batch_in_epoch += 1
            window.add_loss(step_loss / taken)
            logged = self.flush(state) if state.step % log_every == 0 else None
            for hook in hooks:
                hook(state, logged)
            if state.step >= total_steps:
                return "max_steps"
