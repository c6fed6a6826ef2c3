"""Pooling: max and average pooling over windows, and the adaptive (global) pools."""

from __future__ import annotations

from typing import Any

from torch import nn

from engine.ops.layers.common import LAYOUTS, P
from engine.ops.registry import In, Inferred, OpDef, Param, registry
from engine.ops.rules import (
    as_written,
    bool_param,
    check_pool_padding,
    need_rank,
    per_dim,
    size_param,
    windowed,
)


def _pool_stride(p: P) -> Any:
    return p["stride"] if p["stride"] is not None else p["kernel_size"]


def _pool_stride_param(spatial: int) -> Param:
    return size_param(
        "stride",
        None,
        "Step of the window (default: kernel_size); one number, or one per dimension.",
        spatial,
        nullable=True,
    )


def _maxpool(spatial: int, cls: type[nn.Module]) -> OpDef:
    name, layout = cls.__name__, LAYOUTS[spatial]

    def infer(p: P, ins: list[In]) -> Inferred:
        (x,) = ins
        need_rank(name, x, (spatial + 1,), layout)
        check_pool_padding(name, p["kernel_size"], p["padding"], p["dilation"], spatial)
        out = windowed(
            name, x, spatial, p["kernel_size"], _pool_stride(p), p["padding"], p["dilation"]
        )
        return Inferred((x.shape[0], *out), "float32", 0)

    return OpDef(
        name=name,
        category="Pooling",
        help=f"Maximum over sliding windows of a {layout} input.",
        params=(
            size_param(
                "kernel_size", 2, "Size of the window: one number, or one per dimension.", spatial
            ),
            _pool_stride_param(spatial),
            size_param(
                "padding", 0, "Implicit negative-infinity padding on each side.", spatial, lo=0
            ),
            size_param("dilation", 1, "Spacing between window elements.", spatial),
        ),
        arity=(1, 1),
        infer=infer,
        module=lambda p, ins: (
            cls,
            {
                "kernel_size": as_written(p["kernel_size"]),
                "stride": as_written(_pool_stride(p)),
                "padding": as_written(p["padding"]),
                "dilation": as_written(p["dilation"]),
            },
        ),
        input_hint=layout,
        keywords=("max pooling", "downsample", "subsample"),
    )


registry.register(_maxpool(1, nn.MaxPool1d))
registry.register(_maxpool(2, nn.MaxPool2d))
registry.register(_maxpool(3, nn.MaxPool3d))


def _avgpool(spatial: int, cls: type[nn.Module]) -> OpDef:
    name, layout = cls.__name__, LAYOUTS[spatial]

    def infer(p: P, ins: list[In]) -> Inferred:
        (x,) = ins
        need_rank(name, x, (spatial + 1,), layout)
        check_pool_padding(name, p["kernel_size"], p["padding"], 1, spatial)
        out = windowed(name, x, spatial, p["kernel_size"], _pool_stride(p), p["padding"], 1)
        return Inferred((x.shape[0], *out), "float32", 0)

    return OpDef(
        name=name,
        category="Pooling",
        help=f"Average over sliding windows of a {layout} input.",
        params=(
            size_param(
                "kernel_size", 2, "Size of the window: one number, or one per dimension.", spatial
            ),
            _pool_stride_param(spatial),
            size_param("padding", 0, "Zero padding on each side.", spatial, lo=0),
            bool_param("count_include_pad", True, "Count padding zeros in the average."),
        ),
        arity=(1, 1),
        infer=infer,
        module=lambda p, ins: (
            cls,
            {
                "kernel_size": as_written(p["kernel_size"]),
                "stride": as_written(_pool_stride(p)),
                "padding": as_written(p["padding"]),
                "count_include_pad": p["count_include_pad"],
            },
        ),
        input_hint=layout,
        keywords=("average pooling", "mean pooling", "downsample", "smooth"),
    )


registry.register(_avgpool(1, nn.AvgPool1d))
registry.register(_avgpool(2, nn.AvgPool2d))


def _adaptive(spatial: int, cls: type[nn.Module], what: str) -> OpDef:
    name, layout = cls.__name__, LAYOUTS[spatial]

    def infer(p: P, ins: list[In]) -> Inferred:
        (x,) = ins
        need_rank(name, x, (spatial + 1,), layout)
        wanted = per_dim(p["output_size"], spatial)
        out = tuple(s if w is None else w for s, w in zip(x.shape[1:], wanted, strict=True))
        return Inferred((x.shape[0], *out), "float32", 0)

    # PyTorch lets a 2-d (and 3-d) target keep a size with None; the 1-d one takes ints only.
    target = (
        "length L"
        if spatial == 1
        else "[h, w]: one number, or one per dimension (null keeps that size)"
    )
    return OpDef(
        name=name,
        category="Pooling",
        help=f"{what}-pool a {layout} input to a fixed size whatever its size.",
        params=(
            size_param(
                "output_size",
                1,
                f"Target {target}.",
                spatial,
                hi=65536,
                item_nullable=spatial > 1,
            ),
        ),
        arity=(1, 1),
        infer=infer,
        module=lambda p, ins: (cls, {"output_size": as_written(p["output_size"])}),
        input_hint=layout,
        keywords=("global pooling", f"global {what.lower()} pooling", "gap", "adaptive"),
    )


registry.register(_adaptive(1, nn.AdaptiveAvgPool1d, "Average"))
registry.register(_adaptive(2, nn.AdaptiveAvgPool2d, "Average"))
registry.register(_adaptive(2, nn.AdaptiveMaxPool2d, "Max"))
