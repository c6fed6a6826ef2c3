"""TrainConfig: a few keys make a whole config; bad ones are named."""

from __future__ import annotations

import pytest

from engine.train import ConfigError, TrainConfig, parse_config


def test_epochs_alone_is_a_whole_config():
    cfg = TrainConfig.model_validate({"epochs": 5})
    assert cfg.epochs == 5
    assert cfg.task == "auto" and cfg.loss is None
    assert cfg.optimizer.name == "adam" and cfg.scheduler.name == "none"
    assert cfg.precision == "fp32" and cfg.device == "auto" and cfg.early_stopping is None


def test_config_round_trips_through_json():
    cfg = parse_config({"epochs": 3, "optimizer": {"name": "sgd", "nesterov": True},
                        "early_stopping": {"metric": "val/accuracy", "mode": "max"}})
    assert parse_config(cfg.model_dump_json()) == cfg


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"epochs": 0}, "epochs"),
        ({"batch_size": "big"}, "batch_size"),
        ({"optimizer": {"name": "lion"}}, "optimizer.name"),
        ({"optimizer": {"lr": -1}}, "optimizer.lr"),
        ({"scheduler": {"name": "cosine", "warmup": 3}}, "scheduler.warmup"),
        ({"precision": "fp8"}, "precision"),
        ({"device": "tpu"}, "device"),
        ({"early_stopping": {"patience": 0}}, "early_stopping.patience"),
        ({"learning_rate": 0.1}, "learning_rate"),
    ],
)
def test_bad_fields_are_named(bad, field):
    with pytest.raises(ConfigError) as info:
        parse_config(bad)
    assert field in [p["field"] for p in info.value.problems]
    assert f"{field}:" in str(info.value)


def test_loss_must_fit_the_task():
    with pytest.raises(ConfigError, match="loss 'mse' is for regression, but task is 'classification'"):
        parse_config({"task": "classification", "loss": "mse"})


def test_nesterov_needs_sgd_with_momentum():
    with pytest.raises(ConfigError, match="optimizer: .*nesterov needs optimizer 'sgd'"):
        parse_config({"optimizer": {"name": "adam", "nesterov": True}})
