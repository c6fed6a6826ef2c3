"""Precision: autocast per precision and device, and the backward step in each of its forms."""

from __future__ import annotations

import contextlib

import pytest
import torch

from engine.train import TrainingError
from engine.train.precision import Precision, backward_step

CPU = torch.device("cpu")


def test_fp32_enters_no_context_and_scales_nothing():
    precision = Precision.for_device("fp32", CPU)
    assert precision.autocast is contextlib.nullcontext
    assert not precision.mixed and not precision.scaler.is_enabled()


def test_bf16_on_cpu_runs_linear_layers_in_bf16():
    precision = Precision.for_device("bf16", CPU)
    assert precision.mixed and not precision.scaler.is_enabled()
    with precision.autocast():
        out = torch.nn.Linear(4, 2)(torch.randn(3, 4))
    assert out.dtype == torch.bfloat16


def test_fp16_needs_cuda():
    with pytest.raises(TrainingError, match="needs a CUDA device") as err:
        Precision.for_device("fp16", CPU)
    assert err.value.field == "precision"


def _model_and_loss(seed: int = 0) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(seed)
    model = torch.nn.Linear(4, 1)
    loss = (model(torch.randn(8, 4) * 100) ** 2).mean()
    return model, loss


def test_plain_step_is_zero_grad_backward_step():
    model, loss = _model_and_loss()
    by_hand, loss_by_hand = _model_and_loss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    opt_by_hand = torch.optim.SGD(by_hand.parameters(), lr=0.01)
    step = backward_step(opt, list(model.parameters()), scaler=Precision.for_device("fp32", CPU).scaler,
                         grad_clip=None)
    step(loss)
    opt_by_hand.zero_grad(set_to_none=True)
    loss_by_hand.backward()
    opt_by_hand.step()
    for a, b in zip(model.parameters(), by_hand.parameters(), strict=True):
        assert torch.equal(a, b)


def test_clipped_step_clips_the_gradient_norm():
    model, loss = _model_and_loss()
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.01)
    step = backward_step(opt, params, scaler=Precision.for_device("fp32", CPU).scaler, grad_clip=0.5)
    step(loss)
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params]))
    assert norm == pytest.approx(0.5, rel=1e-4)
