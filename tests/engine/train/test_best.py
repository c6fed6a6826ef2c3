"""The best checkpoint: chosen by `best` (or early stopping's metric, or val/loss), with its metrics."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import load, mlp_spec
from safetensors.torch import load_file

from engine.build import build
from engine.train import CallbackBase, ListSink, TrainingError, train
from engine.train.checkpoint import checkpoint_metrics
from engine.train.metrics import evaluate, resolve_task


def _val_by_epoch(sink: ListSink, key: str) -> dict[int, float]:
    return {int(epoch): values[key] for _, epoch, values in sink.points if key in values and "val/loss" in values}


def test_best_follows_its_own_metric_and_keeps_that_epochs_metrics(digits, tmp_path):
    spec = mlp_spec([1, 8, 8], 10)
    cfg = {"epochs": 4, "optimizer": {"lr": 0.02}, "keep_checkpoints": 4,
           "best": {"metric": "val/f1", "mode": "max"},
           "early_stopping": {"metric": "val/loss", "patience": 10}}
    sink = ListSink()
    result = train(spec, digits, cfg, out_dir=tmp_path, sink=sink)
    assert result.best_checkpoint == tmp_path / "checkpoints" / "best"
    f1 = _val_by_epoch(sink, "val/f1")
    best_epoch = max(f1, key=lambda e: (f1[e], -e))  # the first epoch with the highest F1
    state = json.loads((result.best_checkpoint / "state.json").read_text())
    assert state["epoch"] == best_epoch
    assert state["trainer"]["best"]["metric"] == "val/f1" and state["trainer"]["monitor"]["metric"] == "val/loss"
    metrics = checkpoint_metrics(result.best_checkpoint)
    assert metrics["val/f1"] == f1[best_epoch] == max(f1.values())
    assert metrics["val/loss"] == _val_by_epoch(sink, "val/loss")[best_epoch]
    assert "val/confusion_matrix" not in metrics
    # Every epoch checkpoint has its own epoch's validation.
    for epoch in f1:
        assert checkpoint_metrics(tmp_path / "checkpoints" / f"epoch-{epoch:04d}")["val/f1"] == f1[epoch]
    # The best checkpoint's weights give its recorded metrics again.
    model = build(spec, seed=0)
    model.load_state_dict(load_file(result.best_checkpoint / "model.safetensors"))
    task = resolve_task(task="auto", loss=None, output_shape=(10,), y=digits.train.y, info=digits.info)
    again = evaluate(model, digits.val, task, prefix="val", batch_size=256, device=torch.device("cpu"))
    assert again["val/accuracy"] == metrics["val/accuracy"]


def test_without_best_or_early_stopping_it_is_the_lowest_val_loss(digits, tmp_path):
    sink = ListSink()
    result = train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 3}, out_dir=tmp_path, sink=sink)
    losses = _val_by_epoch(sink, "val/loss")
    assert checkpoint_metrics(result.best_checkpoint)["val/loss"] == min(losses.values())


def test_a_best_metric_that_is_not_validated_is_named_with_the_choices(digits):
    with pytest.raises(TrainingError, match=r"best.metric 'val/r2' is not a validation metric; choose one of .*val/accuracy") as err:
        train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 1, "best": {"metric": "val/r2", "mode": "max"}})
    assert err.value.field == "best.metric"


def test_a_checkpoint_inside_an_epoch_has_no_validation_metrics(digits, tmp_path):
    steps: list[int] = []

    class Count(CallbackBase):
        def on_train_batch_end(self, state, loss):
            steps.append(state.step)

    result = train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 3}, out_dir=tmp_path,
                   callbacks=[Count()], should_stop=lambda: len(steps) >= 50)
    assert result.status == "cancelled" and result.last_checkpoint.name == "step-0000050"
    assert checkpoint_metrics(result.last_checkpoint) == {}
    assert set(checkpoint_metrics(tmp_path / "checkpoints" / "epoch-0001")) >= {"val/loss", "val/accuracy"}


def test_without_a_validation_split_there_is_no_best_checkpoint(tmp_path):
    splits = load("iris", split={"val": 0.0, "test": 0.2})
    result = train(mlp_spec([4], 3), splits, {"epochs": 2, "best": {"metric": "val/accuracy", "mode": "max"}},
                   out_dir=tmp_path)
    assert result.status == "succeeded" and result.best_checkpoint is None
    assert checkpoint_metrics(result.last_checkpoint) == {}


def test_between_epoch_checkpoints_the_best_is_held_and_written_with_the_next_one(digits, tmp_path):
    """checkpoint_every > 1 (a sweep's trials): `best` is the best epoch's, written once per
    checkpoint rather than once per improving epoch, and announced with that epoch's counters."""
    written: list[tuple[str, int]] = []

    class Seen(CallbackBase):
        def on_checkpoint(self, state, path):
            written.append((path.name, state.epoch))

    sink = ListSink()
    cfg = {"epochs": 5, "optimizer": {"lr": 0.02}, "checkpoint_every": 5, "keep_checkpoints": 1}
    result = train(mlp_spec([1, 8, 8], 10), digits, cfg, out_dir=tmp_path, sink=sink, callbacks=[Seen()])
    losses = _val_by_epoch(sink, "val/loss")
    best_epoch = min(losses, key=lambda e: (losses[e], e))
    assert result.best_checkpoint == tmp_path / "checkpoints" / "best"
    state = json.loads((result.best_checkpoint / "state.json").read_text())
    assert state["epoch"] == best_epoch
    assert checkpoint_metrics(result.best_checkpoint)["val/loss"] == losses[best_epoch]
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["best", "epoch-0005"]
    assert written == [("best", best_epoch), ("epoch-0005", 5)]


def test_a_run_stopped_between_checkpoints_still_writes_its_best(digits, tmp_path):
    epochs_done: list[int] = []

    class Count(CallbackBase):
        def on_validation_end(self, state, metrics):
            epochs_done.append(state.epoch)

    result = train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 6, "checkpoint_every": 6}, out_dir=tmp_path,
                   callbacks=[Count()], should_stop=lambda: len(epochs_done) >= 2)
    assert result.status == "cancelled"
    assert result.best_checkpoint == tmp_path / "checkpoints" / "best"
    assert json.loads((result.best_checkpoint / "state.json").read_text())["epoch"] in (1, 2)
