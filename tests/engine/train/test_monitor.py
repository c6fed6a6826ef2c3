"""The monitored metric: best value, patience, and its counters through state.json."""

from __future__ import annotations

import json

import pytest

from engine.train import TrainingError
from engine.train.config import EarlyStoppingConfig
from engine.train.monitor import Monitor


def test_without_early_stopping_it_tracks_the_lowest_val_loss_and_never_stops():
    monitor = Monitor.for_config(None)
    assert [monitor.update({"val/loss": v}) for v in (1.0, 0.5, 0.7, 0.4)] == [True, True, False, True]
    assert monitor.best_value == 0.4 and monitor.bad_epochs == 0
    for _ in range(50):
        monitor.update({"val/loss": 9.0})
    assert not monitor.should_stop


def test_patience_counts_epochs_without_improvement_beyond_min_delta():
    monitor = Monitor.for_config(
        EarlyStoppingConfig(metric="val/accuracy", mode="max", patience=2, min_delta=0.05)
    )
    assert monitor.update({"val/accuracy": 0.5})
    assert not monitor.update({"val/accuracy": 0.54})  # not by more than min_delta
    assert not monitor.should_stop
    assert not monitor.update({"val/accuracy": 0.52})
    assert monitor.should_stop and monitor.bad_epochs == 2


def test_a_nan_is_never_the_best_and_anything_beats_it():
    monitor = Monitor()
    assert not monitor.update({"val/loss": float("nan")})
    assert monitor.update({"val/loss": 3.0})


def test_an_epoch_without_validation_counts_for_nothing_unless_early_stopping_needs_it():
    assert not Monitor().update({})
    with pytest.raises(TrainingError, match="early_stopping needs a validation split") as err:
        Monitor.for_config(EarlyStoppingConfig()).update({})
    assert err.value.field == "early_stopping"


def test_a_metric_that_is_not_validated_is_named_with_the_choices():
    with pytest.raises(TrainingError, match=r"'val/f2' is not a validation metric; choose one of val/f1, val/loss"):
        Monitor(metric="val/f2").update({"val/loss": 1.0, "val/f1": 0.3, "val/confusion_matrix": [[1]]})


def test_counters_round_trip_through_json():
    monitor = Monitor(patience=3)
    monitor.update({"val/loss": 1.0})
    monitor.update({"val/loss": 2.0})
    monitor.best_checkpoint = "/runs/1/checkpoints/best"
    saved = json.loads(json.dumps({"monitor": monitor.to_json()}))
    again = Monitor(patience=3)
    again.load_json(saved)
    assert again == monitor


def test_the_older_book_format_of_checkpoints_is_read():
    monitor = Monitor()
    monitor.load_json({"book": {"best_value": 0.25, "bad_epochs": 2, "best_checkpoint": "x/best"}})
    assert (monitor.best_value, monitor.bad_epochs, monitor.best_checkpoint) == (0.25, 2, "x/best")
    fresh = Monitor()
    fresh.load_json({})
    assert fresh == Monitor()
