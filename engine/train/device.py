"""The config's device name as a torch.device, with a clear error when it is not there."""

from __future__ import annotations

import torch

from engine.train.errors import TrainingError

__all__ = ["OutOfMemory", "out_of_memory", "resolve_device"]

OutOfMemory = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)


def resolve_device(name: str) -> torch.device:
    """Turn the config's device into a torch.device, with a clear error when it is absent."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise TrainingError(f"device {name!r} asked for, but CUDA is not available here", field="device")
    device = torch.device(name)
    if device.index is not None and device.index >= torch.cuda.device_count():
        raise TrainingError(
            f"device {name!r} does not exist; this machine has {torch.cuda.device_count()} GPU(s)",
            field="device",
        )
    return device


def out_of_memory(device: torch.device, batch_size: int, step: int) -> TrainingError:
    """The error a run fails with when the device runs out of memory: what to lower."""
    return TrainingError(
        f"out of memory on {device} at batch size {batch_size}; lower batch_size "
        f"(or use precision bf16/fp16)",
        step=step,
        field="batch_size",
    )
