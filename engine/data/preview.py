"""Previews of a recipe's training-time augmentation on one of its training samples."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from engine.data.augment import build_augmentation
from engine.data.errors import DataError
from engine.data.load import train_sample

__all__ = ["preview_augmentations"]


def preview_augmentations(
    recipe: Any, index: int = 0, n: int = 8, seed: int = 0, limits: Any = None
) -> Tensor:
    """n augmented versions of train sample `index`, in [0, 1] pixels: (n, C, H, W)."""
    if n < 1:
        raise DataError("n must be at least 1", field="n")
    recipe_model, image = train_sample(recipe, index, limits)  # (C, H, W) in [0, 1]
    if image.dim() != 3:
        raise DataError("augmentation previews need an image dataset", field="source")
    module = build_augmentation(recipe_model.transforms.augment, list(image.shape))
    batch = image.unsqueeze(0).repeat(n, 1, 1, 1)  # (n, C, H, W)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        out = module(batch)
    return out.clamp(0.0, 1.0)
