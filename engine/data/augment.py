"""Training-time augmentation with kornia, and PNG grids for the page.

Previews of a recipe's augmentation on a training sample are `engine.data.preview` (they read
the dataset, which imports this module). kornia is imported when an image augmentation is
built: a run without one never pays its import.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from PIL import Image
from pydantic import TypeAdapter, ValidationError
from torch import Tensor, nn

from engine.data.errors import DataError
from engine.data.recipe import (
    Affine,
    AugmentSpec,
    ColorJitter,
    Crop,
    HFlip,
    Noise,
    VFlip,
)

_specs = TypeAdapter(list[AugmentSpec])


class _TabularNoise(nn.Module):
    """Gaussian noise on (B, F) features, per sample with probability p."""

    def __init__(self, std: float, p: float) -> None:
        super().__init__()
        self.std = std
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        hit = (torch.rand(x.shape[0], 1, device=x.device) < self.p).to(x.dtype)  # (B, 1)
        return x + hit * self.std * torch.randn_like(x)


class _PixelSpace(nn.Module):
    """Run image augmentations on [0, 1] pixels: undo the normalisation, augment, redo it."""

    mean: Tensor  # (1, C, 1, 1)
    std: Tensor  # (1, C, 1, 1)

    def __init__(self, inner: nn.Module, mean: Sequence[float], std: Sequence[float]) -> None:
        super().__init__()
        self.inner = inner
        self.register_buffer(
            "mean", torch.tensor(list(mean), dtype=torch.float32).reshape(1, -1, 1, 1)
        )
        self.register_buffer(
            "std", torch.tensor(list(std), dtype=torch.float32).reshape(1, -1, 1, 1)
        )

    def forward(self, x: Tensor) -> Tensor:  # (B, C, H, W)
        return (self.inner(x * self.std + self.mean) - self.mean) / self.std


def _parse(specs: Sequence[Any]) -> list[Any]:
    try:
        return _specs.validate_python(
            [s.model_dump() if hasattr(s, "model_dump") else s for s in specs]
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise DataError(first["msg"], field=f"transforms.augment.{loc}") from None


def _image_op(spec: Any, shape: Sequence[int]) -> nn.Module:
    import kornia.augmentation as K

    _, height, width = shape
    if isinstance(spec, HFlip):
        return K.RandomHorizontalFlip(p=spec.p)
    if isinstance(spec, VFlip):
        return K.RandomVerticalFlip(p=spec.p)
    if isinstance(spec, Affine):
        return K.RandomAffine(
            degrees=spec.degrees,
            translate=(spec.translate, spec.translate),
            scale=spec.scale,
            p=spec.p,
        )
    if isinstance(spec, Crop):
        if spec.scale is not None:
            return K.RandomResizedCrop((height, width), scale=spec.scale, p=spec.p)
        return K.RandomCrop((height, width), padding=spec.padding, p=spec.p)
    if isinstance(spec, Noise):
        return K.RandomGaussianNoise(mean=0.0, std=spec.std, p=spec.p)
    if isinstance(spec, ColorJitter):
        return K.ColorJitter(spec.brightness, spec.contrast, spec.saturation, spec.hue, p=spec.p)
    raise DataError(f"unknown augmentation {spec!r}")  # pragma: no cover - the parser rejects it


def build_augmentation(
    specs: Sequence[Any],
    feature_shape: Sequence[int],
    *,
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
) -> nn.Module:
    """One module that augments a training batch (B, *feature_shape); nn.Identity when specs is empty.

    Args:
        specs: augmentation entries of the recipe (models or dicts with "op").
        mean, std: per-channel normalisation of image batches; image ops then work on pixels.
    """
    parsed = _parse(specs)
    if not parsed:
        return nn.Identity()
    shape = list(feature_shape)
    ops: list[nn.Module] = []
    for i, spec in enumerate(parsed):
        field = f"transforms.augment.{i}.op"
        if len(shape) == 1:
            if not isinstance(spec, Noise):
                raise DataError(
                    f"'{spec.op}' works on images; this dataset is tabular", field=field
                )
            ops.append(_TabularNoise(spec.std, spec.p))
            continue
        if len(shape) != 3:
            raise DataError(
                f"'{spec.op}' needs images (channels, height, width); features have shape {shape}",
                field=field,
            )
        if isinstance(spec, ColorJitter) and shape[0] != 3:
            raise DataError(
                f"'color_jitter' needs 3-channel (RGB) images; this dataset has {shape[0]} channel(s)",
                field=field,
            )
        ops.append(_image_op(spec, shape))
    module: nn.Module = nn.Sequential(*ops)
    if len(shape) == 3 and mean is not None and std is not None:
        module = _PixelSpace(module, mean, std)
    return module


def png_grid(images: Tensor, nrow: int | None = None, pad: int = 2, min_tile: int = 48) -> bytes:
    """A PNG of images (N, C, H, W) in [0, 1] laid out in a grid; small images are enlarged."""
    if images.dim() == 3:
        images = images.unsqueeze(0)
    if images.dim() != 4 or images.shape[1] not in (1, 3):
        raise DataError(f"expected images (N, 1 or 3, H, W), got shape {list(images.shape)}")
    count, channels, height, width = images.shape
    scale = max(1, math.ceil(min_tile / max(height, width)))
    nrow = nrow or min(count, 8)
    ncol_rows = math.ceil(count / nrow)
    tile_h, tile_w = height * scale, width * scale
    canvas = np.full(
        (ncol_rows * (tile_h + pad) + pad, nrow * (tile_w + pad) + pad, channels),
        255,
        dtype=np.uint8,
    )
    pixels = (images.detach().float().clamp(0, 1).cpu().numpy() * 255).round().astype(np.uint8)
    for k in range(count):
        tile = pixels[k].transpose(1, 2, 0).repeat(scale, axis=0).repeat(scale, axis=1)  # (H, W, C)
        r, c = divmod(k, nrow)
        top, left = pad + r * (tile_h + pad), pad + c * (tile_w + pad)
        canvas[top : top + tile_h, left : left + tile_w] = tile
    img = Image.fromarray(canvas[:, :, 0] if channels == 1 else canvas)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()
