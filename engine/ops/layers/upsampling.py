"""Upsampling: Upsample (nearest or bilinear) and PixelShuffle."""

from __future__ import annotations

import math
from typing import Any

from torch import nn

from engine.ops.layers.common import P
from engine.ops.registry import In, Inferred, OpDef, Param, ShapeError, registry
from engine.ops.rules import as_written, check_divides, int_param, need_rank, per_dim


def _upsample_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_rank("Upsample", x, (2, 3, 4), "[C, L], [C, H, W] or [C, D, H, W]")
    spatial = len(x.shape) - 1
    if p["mode"] == "bilinear" and spatial != 2:
        raise ShapeError(f"Upsample 'bilinear' needs a [C, H, W] input, got {x}", field="mode")
    size, scale = p["size"], p["scale_factor"]
    if size is None and scale is None:
        raise ShapeError("Upsample needs 'size' or 'scale_factor'", field="scale_factor")
    if size is not None:
        if isinstance(size, list) and len(size) != spatial:
            raise ShapeError(
                f"Upsample 'size' needs one number or {spatial} (one per dimension of {x}), "
                f"got {len(size)}",
                field="size",
            )
        out = per_dim(size, spatial)
    else:
        out = tuple(math.floor(s * scale) for s in x.shape[1:])
        if any(o < 1 for o in out):
            raise ShapeError(
                f"Upsample 'scale_factor' {scale} leaves an empty output for {x}",
                field="scale_factor",
            )
    return Inferred((x.shape[0], *out), "float32", 0)


def _upsample_module(p: P, ins: list[In]) -> tuple[type[nn.Module], dict[str, Any]]:
    kwargs: dict[str, Any] = {"mode": p["mode"]}
    if p["size"] is not None:
        kwargs = {"size": as_written(p["size"]), **kwargs}
    else:
        kwargs = {"scale_factor": p["scale_factor"], **kwargs}
    return nn.Upsample, kwargs


registry.register(
    OpDef(
        name="Upsample",
        category="Upsampling",
        help="Resize by a scale factor or to a size: nearest neighbour or bilinear interpolation.",
        params=(
            Param(
                "scale_factor",
                "float",
                2.0,
                "Multiply each spatial size by this (used when 'size' is not given).",
                min=0.0,
                max=1024.0,
                nullable=True,
            ),
            Param(
                "size",
                "int_or_tuple",
                None,
                "Target spatial size: one number, or one per dimension (takes the place of "
                "scale_factor).",
                min=1,
                max=65536,
                nullable=True,
                min_items=1,
                max_items=3,
            ),
            Param(
                "mode",
                "choice",
                "nearest",
                "'nearest' repeats values; 'bilinear' interpolates ([C, H, W] only).",
                choices=("nearest", "bilinear"),
            ),
        ),
        arity=(1, 1),
        infer=_upsample_infer,
        module=_upsample_module,
        input_hint="[C, L], [C, H, W] or [C, D, H, W]",
        keywords=("resize", "interpolate", "scale up", "nearest", "bilinear", "decoder"),
    )
)


def _pixelshuffle_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_rank("PixelShuffle", x, (3,), "[C, H, W]")
    r = p["upscale_factor"]
    check_divides("PixelShuffle", x.shape[0], r * r, "upscale_factor", f"the channels of {x}")
    c, h, w = x.shape
    return Inferred((c // (r * r), h * r, w * r), x.dtype, 0)


registry.register(
    OpDef(
        name="PixelShuffle",
        category="Upsampling",
        help="Rearrange [C*r*r, H, W] into [C, H*r, W*r] (sub-pixel convolution upsampling).",
        params=(int_param("upscale_factor", 2, "Factor r by which height and width grow.", hi=64),),
        arity=(1, 1),
        infer=_pixelshuffle_infer,
        module=lambda p, ins: (nn.PixelShuffle, {"upscale_factor": p["upscale_factor"]}),
        input_hint="[C*r*r, H, W]",
        keywords=("sub-pixel", "depth to space", "super resolution", "upsample"),
    )
)
