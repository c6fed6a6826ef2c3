"""Convolution: Conv1d, Conv2d, Conv3d and the transposed ConvTranspose2d."""

from __future__ import annotations

import math
from typing import Any

from torch import nn

from engine.ops.layers.common import LAYOUTS, P
from engine.ops.registry import In, Inferred, OpDef, Param, ShapeError, registry
from engine.ops.rules import (
    as_written,
    bool_param,
    check_divides,
    int_param,
    need_rank,
    per_dim,
    shown,
    size_param,
    windowed,
)

_GROUPS = int_param("groups", 1, "Blocked connections from input to output channels.", hi=65536)


def _conv_params(spatial: int) -> tuple[Param, ...]:
    return (
        int_param("out_channels", None, "Number of output channels.", required=True),
        size_param(
            "kernel_size", 3, "Size of the window: one number, or one per dimension.", spatial
        ),
        size_param("stride", 1, "Step of the window: one number, or one per dimension.", spatial),
        size_param(
            "padding",
            0,
            "Zeros added on each side (one number, or one per dimension); 'same' keeps the size "
            "(stride 1 only), 'valid' adds none.",
            spatial,
            lo=0,
            choices=("same", "valid"),
        ),
        size_param("dilation", 1, "Spacing between window elements.", spatial),
        _GROUPS,
        bool_param("bias", True, "Learn an additive bias."),
    )


def _conv_infer(name: str, spatial: int) -> Any:
    layout = LAYOUTS[spatial]

    def infer(p: P, ins: list[In]) -> Inferred:
        (x,) = ins
        need_rank(name, x, (spatial + 1,), layout)
        cin, cout, g = x.shape[0], p["out_channels"], p["groups"]
        check_divides(name, cin, g, "groups", f"the input channels of {x}")
        check_divides(name, cout, g, "groups", "out_channels")
        padding = p["padding"]
        if padding == "same":
            if any(s != 1 for s in per_dim(p["stride"], spatial)):
                raise ShapeError(
                    f"{name} 'padding' 'same' needs stride 1 (PyTorch has no 'same' for strided "
                    f"convolutions), got stride {shown(p['stride'])}",
                    field="padding",
                )
            out = tuple(x.shape[1:])
        else:
            padding = 0 if padding == "valid" else padding
            out = windowed(name, x, spatial, p["kernel_size"], p["stride"], padding, p["dilation"])
        window = math.prod(per_dim(p["kernel_size"], spatial))
        count = cout * (cin // g) * window + (cout if p["bias"] else 0)
        return Inferred((cout, *out), "float32", count)

    return infer


def _conv_module(cls: type[nn.Module]) -> Any:
    def module(p: P, ins: list[In]) -> tuple[type[nn.Module], dict[str, Any]]:
        return cls, {
            "in_channels": ins[0].shape[0],
            "out_channels": p["out_channels"],
            "kernel_size": as_written(p["kernel_size"]),
            "stride": as_written(p["stride"]),
            "padding": as_written(p["padding"]),
            "dilation": as_written(p["dilation"]),
            "groups": p["groups"],
            "bias": p["bias"],
        }

    return module


_CONV_WORDS = ("convolution", "filter", "feature map", "cnn", "kernel")

for _spatial, _cls, _what in (
    (1, nn.Conv1d, "1-d convolution over a [channels, length] input (signals, sequences)."),
    (2, nn.Conv2d, "2-d convolution over a [channels, height, width] input (images)."),
    (
        3,
        nn.Conv3d,
        "3-d convolution over a [channels, depth, height, width] input (volumes, video).",
    ),
):
    registry.register(
        OpDef(
            name=_cls.__name__,
            category="Convolution",
            help=_what,
            params=_conv_params(_spatial),
            arity=(1, 1),
            infer=_conv_infer(_cls.__name__, _spatial),
            module=_conv_module(_cls),
            inferred=("in_channels",),
            input_hint=LAYOUTS[_spatial],
            keywords=_CONV_WORDS,
        )
    )


def _convt_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_rank("ConvTranspose2d", x, (3,), "[C, H, W]")
    cin, cout, g = x.shape[0], p["out_channels"], p["groups"]
    check_divides("ConvTranspose2d", cin, g, "groups", f"the input channels of {x}")
    check_divides("ConvTranspose2d", cout, g, "groups", "out_channels")
    k, s, pad, d, op = (
        per_dim(p[name], 2)
        for name in ("kernel_size", "stride", "padding", "dilation", "output_padding")
    )
    if any(o >= ss and o >= dd for o, ss, dd in zip(op, s, d, strict=True)):
        raise ShapeError(
            f"ConvTranspose2d 'output_padding' ({shown(p['output_padding'])}) must be smaller than "
            f"stride ({shown(p['stride'])}) or dilation ({shown(p['dilation'])})",
            field="output_padding",
        )
    out = tuple(
        (h - 1) * ss - 2 * pp + dd * (kk - 1) + oo + 1
        for h, kk, ss, pp, dd, oo in zip(x.shape[1:], k, s, pad, d, op, strict=True)
    )
    if any(o < 1 for o in out):
        raise ShapeError(
            f"ConvTranspose2d padding {shown(p['padding'])} leaves an empty output for the input {x}"
        )
    count = cin * (cout // g) * math.prod(k) + (cout if p["bias"] else 0)
    return Inferred((cout, *out), "float32", count)


registry.register(
    OpDef(
        name="ConvTranspose2d",
        category="Convolution",
        help="2-d transposed convolution (learned upsampling) over [C, H, W].",
        params=(
            int_param("out_channels", None, "Number of output channels.", required=True),
            size_param(
                "kernel_size", 3, "Size of the window: one number, or one per dimension.", 2
            ),
            size_param("stride", 1, "Step of the window: one number, or one per dimension.", 2),
            size_param("padding", 0, "Size removed from each side of the output.", 2, lo=0),
            size_param("output_padding", 0, "Extra size added to one side of the output.", 2, lo=0),
            size_param("dilation", 1, "Spacing between window elements.", 2),
            _GROUPS,
            bool_param("bias", True, "Learn an additive bias."),
        ),
        arity=(1, 1),
        infer=_convt_infer,
        module=lambda p, ins: (
            nn.ConvTranspose2d,
            {
                "in_channels": ins[0].shape[0],
                "out_channels": p["out_channels"],
                "kernel_size": as_written(p["kernel_size"]),
                "stride": as_written(p["stride"]),
                "padding": as_written(p["padding"]),
                "output_padding": as_written(p["output_padding"]),
                "groups": p["groups"],
                "bias": p["bias"],
                "dilation": as_written(p["dilation"]),
            },
        ),
        inferred=("in_channels",),
        input_hint="[C, H, W]",
        keywords=("deconvolution", "upsample", "upconvolution", "decoder", "learned upsampling"),
    )
)
