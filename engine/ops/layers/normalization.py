"""Normalization: BatchNorm1d, BatchNorm2d, LayerNorm and GroupNorm."""

from __future__ import annotations

from torch import nn

from engine.ops.layers.common import EPS, P
from engine.ops.registry import In, Inferred, OpDef, registry
from engine.ops.rules import (
    bool_param,
    check_divides,
    float_param,
    int_param,
    need_min_rank,
    need_rank,
)


def _batchnorm(name: str, ranks: tuple[int, ...], layout: str, cls: type[nn.Module]) -> OpDef:
    def infer(p: P, ins: list[In]) -> Inferred:
        (x,) = ins
        need_rank(name, x, ranks, layout)
        return Inferred(x.shape, "float32", 2 * x.shape[0] if p["affine"] else 0)

    return OpDef(
        name=name,
        category="Normalization",
        help=f"Batch normalisation over the channel dimension of a {layout} input.",
        params=(
            EPS,
            float_param("momentum", 0.1, "Running-statistics update rate.", lo=0.0, hi=1.0),
            bool_param("affine", True, "Learn a per-channel scale and shift."),
        ),
        arity=(1, 1),
        infer=infer,
        module=lambda p, ins: (
            cls,
            {
                "num_features": ins[0].shape[0],
                "eps": p["eps"],
                "momentum": p["momentum"],
                "affine": p["affine"],
            },
        ),
        inferred=("num_features",),
        input_hint=layout,
        keywords=("batch normalization", "batchnorm"),
    )


registry.register(_batchnorm("BatchNorm1d", (1, 2), "[C] or [C, L]", nn.BatchNorm1d))
registry.register(_batchnorm("BatchNorm2d", (3,), "[C, H, W]", nn.BatchNorm2d))


def _layernorm_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_min_rank("LayerNorm", x, 1, "[..., features]")
    return Inferred(x.shape, "float32", 2 * x.shape[-1] if p["elementwise_affine"] else 0)


registry.register(
    OpDef(
        name="LayerNorm",
        category="Normalization",
        help="Layer normalisation over the last dimension.",
        params=(
            EPS,
            bool_param("elementwise_affine", True, "Learn a per-feature scale and shift."),
        ),
        arity=(1, 1),
        infer=_layernorm_infer,
        module=lambda p, ins: (
            nn.LayerNorm,
            {
                "normalized_shape": ins[0].shape[-1],
                "eps": p["eps"],
                "elementwise_affine": p["elementwise_affine"],
            },
        ),
        inferred=("normalized_shape",),
        input_hint="[..., features]",
        keywords=("layer normalization", "transformer"),
    )
)


def _groupnorm_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_min_rank("GroupNorm", x, 1, "[C, ...]")
    check_divides("GroupNorm", x.shape[0], p["num_groups"], "num_groups", f"the channels of {x}")
    return Inferred(x.shape, "float32", 2 * x.shape[0] if p["affine"] else 0)


registry.register(
    OpDef(
        name="GroupNorm",
        category="Normalization",
        help="Group normalisation: channels split into groups normalised per sample.",
        params=(
            int_param(
                "num_groups",
                None,
                "Number of channel groups (must divide the channels).",
                required=True,
                hi=65536,
            ),
            EPS,
            bool_param("affine", True, "Learn a per-channel scale and shift."),
        ),
        arity=(1, 1),
        infer=_groupnorm_infer,
        module=lambda p, ins: (
            nn.GroupNorm,
            {
                "num_groups": p["num_groups"],
                "num_channels": ins[0].shape[0],
                "eps": p["eps"],
                "affine": p["affine"],
            },
        ),
        inferred=("num_channels",),
        input_hint="[C, ...]",
        keywords=("group normalization",),
    )
)
