"""Normalisation statistics, computed from the train split only."""

from __future__ import annotations

import torch
from torch import Tensor


def norm_axis(feature_shape: list[int] | tuple[int, ...]) -> str:
    """Per feature for tables, per channel for images (C, H, W), per element otherwise."""
    if len(feature_shape) == 1:
        return "feature"
    if len(feature_shape) == 3:
        return "channel"
    return "element"


def compute_stats(
    x_train: Tensor, method: str, axis: str, keep: Tensor | None = None
) -> tuple[list[float], list[float]] | None:
    """(mean, std) such that (x - mean) / std normalises; None for method "none".

    Args:
        keep: bool mask over features; False features (encoded categories) stay as they are.
    """
    if method == "none":
        return None
    x = x_train.double()
    if axis == "channel":
        flat = x.transpose(0, 1).reshape(x.shape[1], -1)  # (C, N*H*W)
        dims = 1
    elif axis == "feature":
        flat, dims = x, 0  # (N, F)
    else:
        flat, dims = x.reshape(len(x), -1), 0  # (N, prod(shape))
    if flat.numel() == 0:
        raise ValueError("cannot compute statistics of an empty train split")
    if method == "standard":
        shift = flat.mean(dim=dims)
        scale = flat.std(dim=dims, correction=0)
    elif method == "minmax":
        shift = flat.amin(dim=dims)
        scale = flat.amax(dim=dims) - shift
    else:
        raise ValueError(f"unknown normalisation {method!r}")
    # A constant feature would divide by zero; leave its spread alone.
    scale = torch.where(scale > 1e-12, scale, torch.ones_like(scale))
    if keep is not None:
        shift = torch.where(keep, shift, torch.zeros_like(shift))
        scale = torch.where(keep, scale, torch.ones_like(scale))
    return shift.tolist(), scale.tolist()
