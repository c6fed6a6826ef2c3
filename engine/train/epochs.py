"""The epochs of a run and its end: train, validate and checkpoint each epoch; then the result.

`train_epochs` is the loop over epochs of a started `Run`: `train_epoch` runs the steps of one
(or what a resumed run has left of it), `end_epoch` validates it, steps a per-epoch schedule,
updates the monitors and writes the checkpoints. `finish` makes the result: the final metrics,
the test pass (not for a cancelled run) and the `on_train_end` hooks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.train.assembly import Run
from engine.train.state import TrainResult
from engine.train.steps import epoch_batches

__all__ = ["end_epoch", "finish", "train_epoch", "train_epochs"]


def train_epochs(run: Run, splits: Any) -> str:
    """Train from the state's epoch on: "succeeded", "cancelled" or "stopped_early"."""
    setup, state = run.setup, run.state
    setup.model.train()
    run.steps.window.restart_clock()
    while state.epoch < setup.cfg.epochs and state.step < setup.size.total_steps:
        ended = train_epoch(run, splits.train)
        if ended == "cancelled":  # a mid-epoch checkpoint redraws this epoch's order on resume
            saved = run.checkpoints.save(f"step-{state.step:07d}", run.epoch_start_generator)
            run.last_checkpoint = saved or run.last_checkpoint
            return "cancelled"
        if end_epoch(run, splits.val, ended):
            return "stopped_early"
        run.steps.window.restart_clock()  # samples/s counts training time only
    return "succeeded"


def train_epoch(run: Run, train_set: Any) -> str:
    """The steps of the current epoch, from its first step not yet taken; how they ended."""
    state, size = run.state, run.setup.size
    if state.batch_in_epoch == 0:
        run.epoch_start_generator = run.generator.get_state()
    skip = state.batch_in_epoch * size.grad_accumulation  # micro-batches already done
    batches = epoch_batches(train_set, size.batch_size, run.generator, skip)
    if run.ranks is not None:
        batches = run.ranks.shard(batches)
    ended = run.steps.run(batches, state)
    run.steps.flush(state)
    return ended


def end_epoch(run: Run, val_set: Any, ended: str) -> bool:
    """Count the epoch, validate it, write its checkpoints; whether early stopping ends the run.

    `ended` is how the epoch's steps ended: after "max_steps" this is the run's last epoch.
    """
    state, cfg, last, monitor = run.state, run.setup.cfg, run.last, run.monitor
    state.epoch += 1
    state.batch_in_epoch = 0
    last.val = run.evaluator.validate(val_set, state) or last.val
    run.setup.schedule.after_epoch(last.val)
    if cfg.early_stopping is not None:
        monitor.update(last.val)
    last_epoch = state.epoch >= cfg.epochs or ended == "max_steps" or monitor.should_stop
    writes_epoch = state.epoch % cfg.checkpoint_every == 0 or last_epoch
    if run.best.update(last.val):
        run.checkpoints.save_best(run.generator.get_state(), defer=not writes_epoch)
    if writes_epoch:
        saved = run.checkpoints.save_epoch(run.generator.get_state())
        run.last_checkpoint = saved or run.last_checkpoint
    return monitor.should_stop


def finish(run: Run, test_set: Any, status: str) -> TrainResult:
    """The run's result: its last metrics and, unless cancelled, the test pass; `on_train_end`."""
    setup, state = run.setup, run.state
    run.checkpoints.flush_best()  # a best held in memory (a run stopped between its checkpoints)
    metrics: dict[str, Any] = {**run.last.train, **run.last.val}
    if status != "cancelled":
        metrics.update(run.evaluator.test(test_set, state))
    metrics["epochs"], metrics["steps"] = state.epoch, state.step
    state.metrics, state.status = metrics, status
    best = Path(run.best.best_checkpoint) if run.best.best_checkpoint else None
    result = TrainResult(status=status, metrics=metrics, steps=state.step, epochs=state.epoch,
                         task=setup.task.task,
                         best_checkpoint=best if best and best.exists() else None,
                         last_checkpoint=run.last_checkpoint, out_dir=setup.out_path,
                         model=setup.model, init_plan=setup.plan)
    setup.hooks("on_train_end", state, result)
    return result
