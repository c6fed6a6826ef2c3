"""A run put together before its first step: the setup step, then the resume step and the loop.

`Setup.of` is what a run trains, on what and with what: the device and precision, the seeded
model (with the weights of `init_from`, and its frozen nodes), the run's size, the task, the
class weights, the checkpoint to resume from, the optimizer and its schedule. `Run.start` adds
the run's state and bookkeeping, puts a resumed run back where its checkpoint left it, wraps the
model for the ranks, and builds the validation pass and the step loop. The order of each is the
order the run depends on (the seeds, the RNG draws, which error a run meets first).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from engine.train.callbacks import Callback, Hooks, MetricSink, StopCheck
from engine.train.checkpoint import Checkpoint
from engine.train.config import TrainConfig
from engine.train.device import resolve_device
from engine.train.evaluation import Evaluator
from engine.train.finetune import apply_init
from engine.train.metrics import TaskSpec
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
    set_determinism,
    spec_to_json,
)
from engine.train.state import InitPlan, LastMetrics, TrainState
from engine.train.steps import StepLoop
from engine.train.window import MetricWindow

__all__ = ["Run", "Setup"]

# FSDP's parameter dtype for the config's precision (fp32: the parameters' own).
_MIXED = {"bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class Setup:
    """The setup step: the model, its device and precision, the task, optimizer and schedule."""

    cfg: TrainConfig
    device: torch.device
    precision: Precision
    out_path: Path | None
    hooks: Hooks
    spec: Any
    model: torch.nn.Module
    plan: InitPlan | None
    size: RunSize
    task: TaskSpec
    first_target: torch.Tensor
    class_weight: torch.Tensor | None
    resumed: Checkpoint | None
    optimizer: torch.optim.Optimizer
    schedule: Schedule

    @classmethod
    def of(
        cls, spec: Any, splits: Any, cfg: TrainConfig, ranks: Ranks | None, *,
        out_dir: Path | str | None, callbacks: Iterable[Callback | Any],
        resume_from: Path | str | None, model: torch.nn.Module | None,
        init_from: Path | str | None,
    ) -> Setup:
        """Build the model (or take `model`), load `init_from`, check the data, find the resume."""
        device = resolve_device(cfg.device)
        if ranks is not None:
            device = ranks.device(device)
        precision = Precision.for_device(cfg.precision, device)
        out_path = Path(out_dir) if out_dir is not None else None
        hooks = Hooks(callbacks)
        set_determinism(cfg.deterministic, device)
        spec, model = prepare_model(spec, model, cfg.seed, device)
        plan = apply_init(model, init_from) if init_from is not None else None
        freeze_nodes(model, spec, cfg.freeze)
        size = RunSize.of(splits, cfg)
        task, first_y = probe_task(spec, model, splits, cfg, precision, device)
        weight = class_weights(cfg, task, splits.train, device)
        resumed = find_checkpoint(resume_from) if resume_from is not None else None
        optimizer = make_optimizer(model, cfg, decay_every_parameter=saved_with_one_group(resumed))
        schedule = Schedule(optimizer, cfg, size.total_steps)
        return cls(cfg=cfg, device=device, precision=precision, out_path=out_path, hooks=hooks,
                   spec=spec, model=model, plan=plan, size=size, task=task, first_target=first_y,
                   class_weight=weight, resumed=resumed, optimizer=optimizer, schedule=schedule)


@dataclass
class Run:
    """A run ready for its first step; `last_checkpoint` and `epoch_start_generator` move on.

    `epoch_start_generator` is the shuffle generator at the start of the current epoch: a
    mid-epoch checkpoint stores it, so a resume redraws that epoch's order.
    """

    setup: Setup
    ranks: Ranks | None
    generator: torch.Generator
    state: TrainState
    monitor: Monitor
    best: Monitor
    last: LastMetrics
    checkpoints: Checkpointer
    evaluator: Evaluator
    steps: StepLoop
    last_checkpoint: Path | None
    epoch_start_generator: torch.Tensor

    @classmethod
    def start(
        cls, setup: Setup, ranks: Ranks | None, *, sink: MetricSink | None,
        should_stop: StopCheck | None,
    ) -> Run:
        """The state, monitors and checkpointer; the resume step; the validation and step loops."""
        cfg, model, device, size = setup.cfg, setup.model, setup.device, setup.size
        generator = torch.Generator().manual_seed(cfg.seed)
        forward_model: torch.nn.Module = torch.compile(model) if cfg.compile else model  # type: ignore[assignment]
        eval_model = forward_model
        state = TrainState(config=cfg, model=model, optimizer=setup.optimizer, epochs=cfg.epochs,
                           steps_per_epoch=size.steps_per_epoch, total_steps=size.total_steps,
                           device=str(device))
        monitor, last = Monitor.for_config(cfg.early_stopping), LastMetrics()
        best = Monitor.for_best(cfg.best_policy)
        checkpoints = Checkpointer(setup.out_path, collective=ranks is not None and ranks.sharded,
                                   cfg=cfg, spec_json=spec_to_json(setup.spec),
                                   task=setup.task.task, model=model, optimizer=setup.optimizer,
                                   schedule=setup.schedule, scaler=setup.precision.scaler,
                                   state=state, monitor=monitor, best=best, last=last,
                                   hooks=setup.hooks)
        resumed = setup.resumed
        last_checkpoint = checkpoints.restore(resumed, generator) if resumed is not None else None
        epoch_start_generator = generator.get_state()
        if ranks is not None:  # after restore: every rank starts from the same weights
            names = {id(param): name for name, param in model.named_parameters()}
            wrapped = ranks.wrap(model, device, param_dtype=_MIXED.get(cfg.precision))
            if ranks.sharded:  # fully_shard replaced the parameters the optimizer was given
                Ranks.rebind_optimizer(setup.optimizer, names, model)
            forward_model = torch.compile(wrapped) if cfg.compile else wrapped  # type: ignore[assignment]
            should_stop = ranks.agreed_stop(should_stop)
        evaluator = Evaluator(eval_model, setup.task, batch_size=size.eval_batch_size,
                              device=device, autocast=setup.precision.autocast, sink=sink,
                              hooks=setup.hooks, ranks=ranks)
        steps = _step_loop(setup, forward_model, state, last, ranks, sink=sink,
                           should_stop=should_stop)
        return cls(setup=setup, ranks=ranks, generator=generator, state=state, monitor=monitor,
                   best=best, last=last, checkpoints=checkpoints, evaluator=evaluator, steps=steps,
                   last_checkpoint=last_checkpoint, epoch_start_generator=epoch_start_generator)


def _step_loop(
    setup: Setup, forward_model: torch.nn.Module, state: TrainState, last: LastMetrics,
    ranks: Ranks | None, *, sink: MetricSink | None, should_stop: StopCheck | None,
) -> StepLoop:
    """The step loop of `setup`'s run, its train window counting from the state's step."""
    window = MetricWindow(device=setup.device, count_correct=setup.task.kind == "multiclass",
                          first_step=state.step,
                          reduce=ranks.reduce_window if ranks is not None else None)
    return StepLoop(
        model=forward_model, task=setup.task, first_target=setup.first_target, cfg=setup.cfg,
        precision=setup.precision, optimizer=setup.optimizer, schedule=setup.schedule, last=last,
        sink=sink, hooks=setup.hooks, window=window, should_stop=should_stop, device=setup.device,
        total_steps=setup.size.total_steps, class_weight=setup.class_weight,
        micro_batches_per_epoch=setup.size.micro_batches_per_epoch, ranks=ranks,
    )
