"""Linear: the fully connected layer over the last dimension."""

from __future__ import annotations

from torch import nn

from engine.ops.layers.common import P
from engine.ops.registry import In, Inferred, OpDef, registry
from engine.ops.rules import bool_param, int_param, need_min_rank


def _linear_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_min_rank("Linear", x, 1, "[..., features]")
    fin, fout = x.shape[-1], p["out_features"]
    return Inferred((*x.shape[:-1], fout), "float32", fin * fout + (fout if p["bias"] else 0))


registry.register(
    OpDef(
        name="Linear",
        category="Linear",
        help="Fully connected layer y = xW^T + b over the last dimension.",
        params=(
            int_param("out_features", None, "Size of each output sample.", required=True),
            bool_param("bias", True, "Learn an additive bias."),
        ),
        arity=(1, 1),
        infer=_linear_infer,
        module=lambda p, ins: (
            nn.Linear,
            {"in_features": ins[0].shape[-1], "out_features": p["out_features"], "bias": p["bias"]},
        ),
        inferred=("in_features",),
        input_hint="[..., features]",
        keywords=("dense", "fully connected", "mlp", "projection", "affine"),
    )
)
