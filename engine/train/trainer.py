"""The training loop: spec + splits + config -> trained model, metrics and checkpoints.

`train()` is the loop over epochs; each concern it calls has its own module:

    setup.py       the model on its device, the data checked against the graph, the task, sizes
    precision.py   autocast, grad scaling and the backward step
    optim.py       the optimizer and its parameter groups (no weight decay on biases and norms)
    schedule.py    the learning-rate schedule, per step or per epoch
    steps.py       the steps of one epoch (the hot loop) and the order of its batches
    window.py      train loss, accuracy and samples/s per `log_every` steps; the NaN check
    evaluation.py  the validation pass per epoch and the test pass at the end
    monitor.py     the best value of a monitored metric: early stopping, the best checkpoint
    resume.py      what a run's checkpoints hold, and resuming from one
    finetune.py    starting from another checkpoint's weights (init_from)
    ranks.py       one rank of a multi-process run (processes > 1): its share of each batch, the
                   agreed stop, the summed train window (engine.train.distributed starts the ranks)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch

from engine.train.callbacks import Callback, Hooks, MetricSink, StopCheck
from engine.train.config import TrainConfig, parse_config
from engine.train.device import OutOfMemory, out_of_memory, resolve_device
from engine.train.errors import TrainingError
from engine.train.evaluation import Evaluator
from engine.train.finetune import apply_init
from engine.train.monitor import Monitor
from engine.train.optim import make_optimizer
from engine.train.precision import Precision
from engine.train.ranks import Ranks
from engine.train.resume import Checkpointer, find_checkpoint, saved_with_one_group
from engine.train.schedule import Schedule
from engine.train.setup import (
    RunSize,
    class_weights,
    freeze_nodes,
    prepare_model,
    probe_task,
    spec_to_json,
)
from engine.train.state import LastMetrics, TrainResult, TrainState
from engine.train.steps import StepLoop, epoch_batches
from engine.train.window import MetricWindow

__all__ = ["train", "TrainResult", "resolve_device", "spec_to_json"]


def train(
    spec: Any,
    splits: Any,
    config: TrainConfig | Mapping[str, Any] | None = None,
    *,
    out_dir: Path | str | None = None,
    callbacks: Iterable[Callback | Any] = (),
    sink: MetricSink | None = None,
    should_stop: StopCheck | None = None,
    resume_from: Path | str | None = None,
    model: torch.nn.Module | None = None,
    init_from: Path | str | None = None,
) -> TrainResult:
    """Train `build(spec)` (or `model`) on `splits` and return metrics and checkpoint paths.

    Args:
        spec: the graph spec (GraphSpec or dict); may be None when `model` is given.
        splits: `Splits(train, val, test, info)` from `engine.data.load_dataset`.
        config: TrainConfig or a dict for it.
        out_dir: where `checkpoints/` go; None writes nothing.
        callbacks: objects with any of the Lightning-named hooks.
        sink: receives metric points (`train/loss` every `log_every` steps, `val/*` per epoch).
        should_stop: consulted before every step; True cancels within one step.
            With `config.processes` > 1, train() is one rank of a process group (see
            engine.train.distributed): the ranks agree on the stop before every step, only rank 0
            uses `sink` and `out_dir`, and callbacks run on every rank.
        resume_from: a checkpoint directory, or a run directory / `checkpoints/` (latest wins).
            With a config of more epochs (or another max_steps) the run goes on from the
            checkpoint's step with its optimizer and schedule state; cosine and one-cycle, laid
            out over the total steps, are laid out again over the new total and continue at
            the rate that schedule has at the checkpoint's step (see `Checkpointer.restore`).
        model: an already built module to train instead of building `spec`.
        init_from: a checkpoint (or export) directory to fine-tune from: after the seeded
            build, every tensor whose name and shape match is copied; `result.init_plan`
            lists what was and was not. Not together with `resume_from`.
    """
    cfg = parse_config(config)
    ranks = Ranks.current(cfg.processes)
    if ranks is not None and not ranks.is_main:  # rank 0 alone reports and writes checkpoints
        sink, out_dir = None, None
    if init_from is not None and resume_from is not None:
        raise TrainingError(
            "init_from starts a new run from a checkpoint's weights and resume_from continues "
            "one; give one of them", field="init_from",
        )
    device = resolve_device(cfg.device)
    if ranks is not None:
        device = ranks.device(device)
    precision = Precision.for_device(cfg.precision, device)
    out_path = Path(out_dir) if out_dir is not None else None
    hooks = Hooks(callbacks)
    spec, model = prepare_model(spec, model, cfg.seed, device)
    plan = apply_init(model, init_from) if init_from is not None else None
    freeze_nodes(model, spec, cfg.freeze)
    size = RunSize.of(splits, cfg)
    task, first_y = probe_task(spec, model, splits, cfg, precision, device)
    weight = class_weights(cfg, task, splits.train, device)
    resumed = find_checkpoint(resume_from) if resume_from is not None else None
    optimizer = make_optimizer(model, cfg, decay_every_parameter=saved_with_one_group(resumed))
    schedule = Schedule(optimizer, cfg, size.total_steps)
    generator = torch.Generator().manual_seed(cfg.seed)
    forward_model: torch.nn.Module = torch.compile(model) if cfg.compile else model  # type: ignore[assignment]
    eval_model = forward_model
    state = TrainState(config=cfg, model=model, optimizer=optimizer, epochs=cfg.epochs,
                       steps_per_epoch=size.steps_per_epoch, total_steps=size.total_steps,
                       device=str(device))
    monitor, last = Monitor.for_config(cfg.early_stopping), LastMetrics()
    best_monitor = Monitor.for_best(cfg.best_policy)
    checkpoints = Checkpointer(out_path, cfg=cfg, spec_json=spec_to_json(spec), task=task.task,
                               model=model, optimizer=optimizer, schedule=schedule,
                               scaler=precision.scaler, state=state, monitor=monitor,
                               best=best_monitor, last=last, hooks=hooks)
    last_checkpoint = checkpoints.restore(resumed, generator) if resumed is not None else None
    epoch_start_generator = generator.get_state()
    if ranks is not None:  # after restore: every rank starts from the same weights
        wrapped = ranks.wrap(model, device)
        forward_model = torch.compile(wrapped) if cfg.compile else wrapped  # type: ignore[assignment]
        should_stop = ranks.agreed_stop(should_stop)
    evaluator = Evaluator(eval_model, task, batch_size=size.eval_batch_size, device=device,
                          autocast=precision.autocast, sink=sink, hooks=hooks, ranks=ranks)
    steps = StepLoop(
        model=forward_model, task=task, first_target=first_y, cfg=cfg, precision=precision,
        optimizer=optimizer, schedule=schedule, last=last, sink=sink, hooks=hooks,
        window=MetricWindow(device=device, count_correct=task.kind == "multiclass", first_step=state.step,
                            reduce=ranks.reduce_window if ranks is not None else None),
        should_stop=should_stop, device=device, total_steps=size.total_steps,
        class_weight=weight, micro_batches_per_epoch=size.micro_batches_per_epoch, ranks=ranks,
    )
    status = "succeeded"
    try:
        hooks("on_train_start", state)
        model.train()
        steps.window.restart_clock()
        while state.epoch < cfg.epochs and state.step < size.total_steps:
            if state.batch_in_epoch == 0:
                epoch_start_generator = generator.get_state()
            skip = state.batch_in_epoch * size.grad_accumulation  # micro-batches already done
            batches = epoch_batches(splits.train, size.batch_size, generator, skip)
            if ranks is not None:
                batches = ranks.shard(batches)
            ended = steps.run(batches, state)
            steps.flush(state)
            if ended == "cancelled":  # a mid-epoch checkpoint redraws this epoch's order on resume
                status = "cancelled"
                saved = checkpoints.save(f"step-{state.step:07d}", epoch_start_generator)
                last_checkpoint = saved or last_checkpoint
                break
            state.epoch += 1
            state.batch_in_epoch = 0
            last.val = evaluator.validate(splits.val, state) or last.val
            schedule.after_epoch(last.val)
            if cfg.early_stopping is not None:
                monitor.update(last.val)
            if best_monitor.update(last.val):
                checkpoints.save_best(generator.get_state())
            last_epoch = state.epoch >= cfg.epochs or ended == "max_steps" or monitor.should_stop
            if state.epoch % cfg.checkpoint_every == 0 or last_epoch:
                last_checkpoint = checkpoints.save_epoch(generator.get_state()) or last_checkpoint
            if monitor.should_stop:
                status = "stopped_early"
                break
            steps.window.restart_clock()  # samples/s counts training time only
        metrics: dict[str, Any] = {**last.train, **last.val}
        if status != "cancelled":
            metrics.update(evaluator.test(splits.test, state))
        metrics["epochs"], metrics["steps"] = state.epoch, state.step
        state.metrics, state.status = metrics, status
        best = Path(best_monitor.best_checkpoint) if best_monitor.best_checkpoint else None
        result = TrainResult(status=status, metrics=metrics, steps=state.step, epochs=state.epoch,
                             task=task.task, best_checkpoint=best if best and best.exists() else None,
                             last_checkpoint=last_checkpoint, out_dir=out_path, model=model,
                             init_plan=plan)
        hooks("on_train_end", state, result)
        return result
    except OutOfMemory:
        err = out_of_memory(device, size.batch_size, state.step)
        state.status = "failed"
        hooks("on_exception", state, err)
        raise err from None
    except BaseException as exc:
        state.status = "failed"
        hooks("on_exception", state, exc)
        raise
