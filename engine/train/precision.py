"""Precision: the autocast context of the forward pass, grad scaling, and the backward step."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from engine.train.errors import TrainingError

__all__ = ["Precision", "accumulating_step", "autocast_factory", "backward_step"]

AutocastFactory = Callable[[], contextlib.AbstractContextManager[Any]]


def autocast_factory(precision: str, device: torch.device) -> AutocastFactory:
    """A zero-argument factory of the forward pass's context (nullcontext for fp32)."""
    if precision == "fp32":
        return contextlib.nullcontext
    if precision == "fp16":
        if device.type != "cuda":
            raise TrainingError(
                "precision 'fp16' needs a CUDA device; use 'bf16' or 'fp32' on CPU",
                field="precision",
            )
        dtype = torch.float16
    else:
        if device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise TrainingError(
                f"precision 'bf16' is not supported by {torch.cuda.get_device_name(device)}; "
                "use 'fp16' or 'fp32'",
                field="precision",
            )
        dtype = torch.bfloat16
    return lambda: torch.autocast(device_type=device.type, dtype=dtype)


@dataclass(frozen=True)
class Precision:
    """How a run computes: `autocast()` around forwards, a GradScaler enabled for fp16 only."""

    name: str
    autocast: AutocastFactory
    scaler: torch.amp.GradScaler

    @classmethod
    def for_device(cls, name: str, device: torch.device) -> Precision:
        """The precision `name` ("fp32", "bf16", "fp16") on `device`; TrainingError if it cannot."""
        return cls(
            name=name,
            autocast=autocast_factory(name, device),
            scaler=torch.amp.GradScaler(device.type, enabled=name == "fp16"),
        )

    @property
    def mixed(self) -> bool:
        """Whether forwards run under autocast (False: the context is skipped altogether)."""
        return self.name != "fp32"


def backward_step(
    optimizer: torch.optim.Optimizer,
    params: Sequence[torch.Tensor],
    *,
    scaler: torch.amp.GradScaler,
    grad_clip: float | None,
) -> Callable[[torch.Tensor], None]:
    """The function `step(loss)`: zero the grads, backward (scaled for fp16), clip, step.

    The choice between scaled/plain and clipped/unclipped is made here once, so the training
    loop pays one call per step and no branch.
    """
    # optimizer.step is looked up per call: an LR scheduler wraps it after the optimizer is made.
    zero_grad = optimizer.zero_grad
    clip = torch.nn.utils.clip_grad_norm_
    if scaler.is_enabled():

        def scaled_step(loss: torch.Tensor) -> None:
            zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            if grad_clip is not None:
                scaler.unscale_(optimizer)
                clip(params, grad_clip)
            scaler.step(optimizer)
            scaler.update()

        return scaled_step
    if grad_clip is not None:

        def clipped_step(loss: torch.Tensor) -> None:
            zero_grad(set_to_none=True)
            loss.backward()
            clip(params, grad_clip)
            optimizer.step()

        return clipped_step

    def plain_step(loss: torch.Tensor) -> None:
        zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return plain_step


def accumulating_step(
    optimizer: torch.optim.Optimizer,
    params: Sequence[torch.Tensor],
    *,
    scaler: torch.amp.GradScaler,
    grad_clip: float | None,
) -> tuple[Callable[[], None], Callable[[torch.Tensor], None], Callable[[], None]]:
    """`backward_step` in three parts for gradient accumulation: `(start, backward, finish)`.

    `start()` zeroes the grads before the first micro-batch, `backward(loss)` adds one
    micro-batch's gradients (scaled for fp16), `finish()` unscales, clips and steps once.
    """
    zero_grad = optimizer.zero_grad
    clip = torch.nn.utils.clip_grad_norm_
    scaled = scaler.is_enabled()

    def start() -> None:
        zero_grad(set_to_none=True)

    def backward(loss: torch.Tensor) -> None:
        (scaler.scale(loss) if scaled else loss).backward()

    def finish() -> None:
        if scaled:
            if grad_clip is not None:
                scaler.unscale_(optimizer)
                clip(params, grad_clip)
            scaler.step(optimizer)
            scaler.update()
            return
        if grad_clip is not None:
            clip(params, grad_clip)
        optimizer.step()

    return start, backward, finish
