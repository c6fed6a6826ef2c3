"""Evaluation in a run: val metrics reach the sink and the hooks per epoch, test at the end."""

from __future__ import annotations

import contextlib

import torch
from conftest import mlp_spec

from engine.build import build
from engine.data import TensorSet
from engine.train import CallbackBase, ListSink, TrainConfig
from engine.train.callbacks import Hooks
from engine.train.evaluation import Evaluator
from engine.train.metrics import TaskSpec
from engine.train.state import TrainState

TASK = TaskSpec("multiclass", "cross_entropy", 3, 3)


def evaluator_and_state(sink, callbacks=()):
    model = build(mlp_spec([4], 3), seed=0)
    hooks = Hooks(callbacks)
    evaluator = Evaluator(model, TASK, batch_size=16, device=torch.device("cpu"),
                          autocast=contextlib.nullcontext, sink=sink, hooks=hooks)
    state = TrainState(config=TrainConfig(), model=model, optimizer=None, epochs=2,
                       steps_per_epoch=10, total_steps=20, device="cpu", epoch=1, step=10,
                       batch_in_epoch=4)
    return evaluator, state


def split(n: int) -> TensorSet:
    torch.manual_seed(n)
    return TensorSet(torch.randn(n, 4), torch.randint(0, 3, (n,)))


def test_validation_is_logged_at_the_epoch_and_hooks_get_only_numbers():
    seen = []

    class Seen(CallbackBase):
        def on_validation_end(self, state, metrics):
            seen.append(dict(metrics))

    sink = ListSink()
    evaluator, state = evaluator_and_state(sink, [Seen()])
    metrics = evaluator.validate(split(40), state)
    assert {"val/loss", "val/accuracy", "val/f1", "val/confusion_matrix"} <= set(metrics)
    assert state.metrics["val/accuracy"] == metrics["val/accuracy"]
    ((step, epoch, logged),) = sink.points
    assert (step, epoch) == (10, 1.0)
    assert "val/confusion_matrix" not in logged and seen == [logged]


def test_test_metrics_are_logged_at_the_fractional_epoch():
    sink = ListSink()
    evaluator, state = evaluator_and_state(sink)
    metrics = evaluator.test(split(30), state)
    assert sum(map(sum, metrics["test/confusion_matrix"])) == 30
    assert sink.points[0][:2] == (10, 1.4)


def test_an_empty_split_is_not_evaluated():
    sink = ListSink()
    evaluator, state = evaluator_and_state(sink)
    empty = TensorSet(torch.zeros(0, 4), torch.zeros(0, dtype=torch.int64))
    assert evaluator.validate(empty, state) == {} and evaluator.test(empty, state) == {}
    assert sink.points == []
