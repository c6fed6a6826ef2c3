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
from engine.train.checkpoint import (
    Checkpoint,
    checkpoint_metrics,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from engine.train.config import BestConfig, ConfigError, TrainConfig, parse_config
from engine.train.errors import TrainingError
from engine.train.finetune import InitPlan, init_plan
from engine.train.trainer import TrainResult, resolve_device, train

__all__ = [
    "BestConfig",
    "Callback",
    "CallbackBase",
    "Checkpoint",
    "ConfigError",
    "InitPlan",
    "ListSink",
    "MetricSink",
    "StopCheck",
    "TqdmProgress",
    "TrainConfig",
    "TrainResult",
    "TrainState",
    "TrainingError",
    "checkpoint_metrics",
    "init_plan",
    "latest_checkpoint",
    "load_checkpoint",
    "parse_config",
    "resolve_device",
    "save_checkpoint",
    "train",
]
