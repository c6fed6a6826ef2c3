"""The training loop: spec + splits + config -> trained model, metrics and checkpoints.

`train()` runs a run's steps: `Setup.of` and `Run.start` (assembly.py) put it together, then
`train_epochs` and `finish` (epochs.py) train it and make its result. Each concern they call has
its own module:

    assembly.py    the setup step, the resume step, the loop's parts, in the order a run needs
    epochs.py      the loop over epochs: train, validate, checkpoint; the result at the end
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

from engine.train.assembly import Run, Setup
from engine.train.callbacks import Callback, MetricSink, StopCheck
from engine.train.config import TrainConfig, parse_config
from engine.train.device import OutOfMemory, out_of_memory, resolve_device
from engine.train.epochs import finish, train_epochs
from engine.train.errors import TrainingError
from engine.train.ranks import Ranks
from engine.train.setup import spec_to_json
from engine.train.state import TrainResult

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
    ranks = Ranks.current(cfg.world, cfg.strategy)
    if ranks is not None and not ranks.is_main:  # rank 0 alone reports and writes checkpoints
        sink, out_dir = None, None
    if init_from is not None and resume_from is not None:
        raise TrainingError(
            "init_from starts a new run from a checkpoint's weights and resume_from continues "
            "one; give one of them", field="init_from",
        )
    setup = Setup.of(spec, splits, cfg, ranks, out_dir=out_dir, callbacks=callbacks,
                     resume_from=resume_from, model=model, init_from=init_from)
    run = Run.start(setup, ranks, sink=sink, should_stop=should_stop)
    hooks, state = setup.hooks, run.state
    try:
        hooks("on_train_start", state)
        return finish(run, splits.test, train_epochs(run, splits))
    except OutOfMemory:
        err = out_of_memory(setup.device, setup.size.batch_size, state.step)
        state.status = "failed"
        hooks("on_exception", state, err)
        raise err from None
    except BaseException as exc:
        state.status = "failed"
        hooks("on_exception", state, exc)
        raise
