"""The config fields of issue 10: defaults, round trip, and errors that name the field."""

from __future__ import annotations

import pytest

from engine.train import ConfigError, TrainConfig, parse_config


def test_defaults_change_nothing():
    cfg = TrainConfig()
    assert cfg.best is None and cfg.grad_accumulation == 1 and cfg.label_smoothing == 0.0
    assert cfg.class_weights is None and cfg.freeze == [] and cfg.scheduler.warmup_steps == 0
    assert (cfg.best_policy.metric, cfg.best_policy.mode) == ("val/loss", "min")


def test_the_best_policy_defaults_to_early_stopping_and_else_val_loss():
    stopping = parse_config({"early_stopping": {"metric": "val/accuracy", "mode": "max"}})
    assert (stopping.best_policy.metric, stopping.best_policy.mode) == ("val/accuracy", "max")
    both = parse_config({"early_stopping": {"metric": "val/accuracy", "mode": "max"},
                         "best": {"metric": "val/f1", "mode": "max"}})
    assert both.best_policy.metric == "val/f1" and both.early_stopping.metric == "val/accuracy"


def test_new_fields_round_trip_through_json():
    cfg = parse_config({"best": {"metric": "val/accuracy", "mode": "max"}, "grad_accumulation": 4,
                        "label_smoothing": 0.1, "class_weights": [1.0, 2.0, 0.5], "freeze": ["fc1", " conv1 ", "fc1"],
                        "scheduler": {"name": "cosine", "warmup_steps": 100}})
    assert cfg.freeze == ["fc1", "conv1"]
    assert parse_config(cfg.model_dump_json()) == cfg
    assert parse_config({"class_weights": "balanced"}).class_weights == "balanced"


@pytest.mark.parametrize(
    ("bad", "field", "words"),
    [
        ({"grad_accumulation": 0}, "grad_accumulation", "greater than or equal to 1"),
        ({"label_smoothing": 1.0}, "label_smoothing", "less than 1"),
        ({"loss": "mse", "label_smoothing": 0.1}, "label_smoothing", "not to loss 'mse'"),
        ({"loss": "bce_with_logits", "label_smoothing": 0.1}, "label_smoothing", "cross_entropy"),
        ({"task": "regression", "class_weights": "balanced"}, "class_weights", "task 'regression'"),
        ({"class_weights": "inverse"}, "class_weights", "'balanced'"),
        ({"class_weights": [1.0]}, "class_weights", "at least 2"),
        ({"class_weights": [1.0, -2.0]}, "class_weights.1", "greater than or equal to 0"),
        ({"scheduler": {"warmup_steps": -1}}, "scheduler.warmup_steps", "greater than or equal to 0"),
        ({"scheduler": {"name": "onecycle", "warmup_steps": 5}}, "scheduler.warmup_steps", "pct_start"),
        ({"best": {"metric": "train/loss"}}, "best.metric", "validation metric"),
        ({"best": {"mode": "lowest"}}, "best.mode", "'min' or 'max'"),
        ({"freeze": "fc1"}, "freeze", "valid list"),
    ],
)
def test_bad_values_are_named(bad, field, words):
    with pytest.raises(ConfigError) as info:
        parse_config(bad)
    problems = {p["field"]: p["message"] for p in info.value.problems}
    assert field in problems, problems
    assert words in problems[field]
