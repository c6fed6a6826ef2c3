"""Dropout2d, InstanceNorm1d, InstanceNorm2d and RMSNorm.

Registered after the attention ops, so the palette lists them after the ops of their categories
registered before (Dropout; BatchNorm, LayerNorm, GroupNorm).
"""

from __future__ import annotations

import math

from torch import nn

from engine.ops.layers.common import EPS, LAYOUTS, P
from engine.ops.registry import In, Inferred, OpDef, Param, ShapeError, registry
from engine.ops.rules import bool_param, float_param, need_min_rank, need_rank


def _dropout2d_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_rank("Dropout2d", x, (3,), "[C, H, W]")
    return Inferred(x.shape, "float32", 0)


registry.register(
    OpDef(
        name="Dropout2d",
        category="Regularization",
        help="Zero whole channels of a [C, H, W] input with probability p while training.",
        params=(float_param("p", 0.5, "Probability of zeroing a channel.", lo=0.0, hi=1.0),),
        arity=(1, 1),
        infer=_dropout2d_infer,
        module=lambda p, ins: (nn.Dropout2d, {"p": p["p"]}),
        input_hint="[C, H, W]",
        keywords=("spatial dropout", "channel dropout", "regularization"),
    )
)


def _instancenorm(spatial: int, cls: type[nn.Module]) -> OpDef:
    name, layout = cls.__name__, LAYOUTS[spatial]

    def infer(p: P, ins: list[In]) -> Inferred:
        (x,) = ins
        need_rank(name, x, (spatial + 1,), layout)
        if math.prod(x.shape[1:]) < 2:
            # Statistics over one element are undefined: PyTorch refuses it in training.
            raise ShapeError(
                f"{name} normalises each channel over its {layout[3:-1] or 'positions'}; "
                f"{x} has only one element per channel (at least 2 are needed)"
            )
        return Inferred(x.shape, "float32", 2 * x.shape[0] if p["affine"] else 0)

    return OpDef(
        name=name,
        category="Normalization",
        help=f"Instance normalisation: each channel of each sample of a {layout} input on its own.",
        params=(
            EPS,
            float_param("momentum", 0.1, "Running-statistics update rate.", lo=0.0, hi=1.0),
            bool_param("affine", False, "Learn a per-channel scale and shift."),
            bool_param(
                "track_running_stats", False, "Keep running statistics for evaluation mode."
            ),
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
                "track_running_stats": p["track_running_stats"],
            },
        ),
        inferred=("num_features",),
        input_hint=layout,
        keywords=("instance norm", "style transfer", "contrast normalization"),
    )


registry.register(_instancenorm(1, nn.InstanceNorm1d))
registry.register(_instancenorm(2, nn.InstanceNorm2d))


def _rmsnorm_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_min_rank("RMSNorm", x, 1, "[..., features]")
    return Inferred(x.shape, "float32", x.shape[-1] if p["elementwise_affine"] else 0)


registry.register(
    OpDef(
        name="RMSNorm",
        category="Normalization",
        help="Root-mean-square normalisation over the last dimension (no mean subtraction).",
        params=(
            Param(
                "eps",
                "float",
                None,
                "Added for numerical stability (null: the dtype's machine epsilon).",
                min=0.0,
                max=1.0,
                nullable=True,
            ),
            bool_param("elementwise_affine", True, "Learn a per-feature scale."),
        ),
        arity=(1, 1),
        infer=_rmsnorm_infer,
        module=lambda p, ins: (
            nn.RMSNorm,
            {
                "normalized_shape": ins[0].shape[-1],
                "eps": p["eps"],
                "elementwise_affine": p["elementwise_affine"],
            },
        ),
        inferred=("normalized_shape",),
        input_hint="[..., features]",
        keywords=("root mean square", "llama", "layer norm", "transformer"),
    )
)
