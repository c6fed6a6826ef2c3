"""Training: config, the loop and its pieces, callbacks and sinks, metrics, checkpoints.

`trainer.py` lists the module of each piece `train()` calls.
"""

from engine.train.callbacks import (
    Callback,
    CallbackBase,
    ListSink,
    MetricSink,
    StopCheck,
    TqdmProgress,
    TrainState,
)
from engine.train.checkpoint import Checkpoint, latest_checkpoint, load_checkpoint, save_checkpoint
from engine.train.config import ConfigError, TrainConfig, parse_config
from engine.train.errors import TrainingError
from engine.train.trainer import TrainResult, resolve_device, train

__all__ = [
    "Callback",
    "CallbackBase",
    "Checkpoint",
    "ConfigError",
    "ListSink",
    "MetricSink",
    "StopCheck",
    "TqdmProgress",
    "TrainConfig",
    "TrainResult",
    "TrainState",
    "TrainingError",
    "latest_checkpoint",
    "load_checkpoint",
    "parse_config",
    "resolve_device",
    "save_checkpoint",
    "train",
]
