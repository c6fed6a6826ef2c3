"""The steps of an epoch: the batch order after a resume, and a cancel before the next batch."""

from __future__ import annotations

import torch
from conftest import mlp_spec

from engine.build import build
from engine.data import TensorSet
from engine.train import ListSink, TrainConfig
from engine.train.callbacks import Hooks
from engine.train.metrics import TaskSpec
from engine.train.optim import make_optimizer
from engine.train.precision import Precision
from engine.train.schedule import Schedule
from engine.train.state import LastMetrics, TrainState
from engine.train.steps import StepLoop, epoch_batches
from engine.train.window import MetricWindow

CPU = torch.device("cpu")


def data(n: int = 50) -> TensorSet:
    torch.manual_seed(0)
    return TensorSet(torch.randn(n, 4), torch.randint(0, 3, (n,)))


def test_a_resumed_epoch_gives_the_batches_the_full_epoch_had_left():
    full = list(epoch_batches(data(), 8, torch.Generator().manual_seed(1), skip=0))
    rest = list(epoch_batches(data(), 8, torch.Generator().manual_seed(1), skip=3))
    assert len(full) == 7 and len(rest) == 4
    for (xa, ya), (xb, yb) in zip(full[3:], rest, strict=True):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


def loop(cfg: TrainConfig, sink: ListSink, stop_after: int | None = None):
    model = build(mlp_spec([4], 3), seed=0)
    optimizer = make_optimizer(model, cfg)
    state = TrainState(config=cfg, model=model, optimizer=optimizer, epochs=1, steps_per_epoch=7,
                       total_steps=7, device="cpu")
    calls = []
    steps = StepLoop(
        model=model, task=TaskSpec("multiclass", "cross_entropy", 3, 3),
        first_target=torch.zeros(1, dtype=torch.int64), cfg=cfg,
        precision=Precision.for_device("fp32", CPU), optimizer=optimizer,
        schedule=Schedule(optimizer, cfg, 7), last=LastMetrics(), sink=sink, hooks=Hooks([]),
        window=MetricWindow(device=CPU, count_correct=True, first_step=0),
        should_stop=None if stop_after is None else (lambda: calls.append(1) or len(calls) > stop_after),
        device=CPU, total_steps=7,
    )
    return steps, state


def test_an_epoch_steps_through_every_batch_and_logs_every_log_every_steps():
    sink = ListSink()
    steps, state = loop(TrainConfig.model_validate({"log_every": 3}), sink)
    ended = steps.run(epoch_batches(data(), 8, torch.Generator().manual_seed(1), 0), state)
    assert ended == "max_steps" and state.step == 7 and state.batch_in_epoch == 7
    assert [step for step, _, _ in sink.points] == [3, 6]
    assert steps.flush(state) is not None and [s for s, _, _ in sink.points] == [3, 6, 7]


def test_should_stop_is_asked_before_each_batch():
    sink = ListSink()
    steps, state = loop(TrainConfig(), sink, stop_after=2)
    ended = steps.run(epoch_batches(data(), 8, torch.Generator().manual_seed(1), 0), state)
    assert ended == "cancelled" and state.step == 2
