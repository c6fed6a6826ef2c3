"""Attention: multi-head self-attention and the Transformer encoder block."""

from __future__ import annotations

from torch import nn

from engine.ops import modules
from engine.ops.layers.common import P
from engine.ops.registry import In, Inferred, OpDef, Param, registry
from engine.ops.rules import bool_param, check_divides, float_param, int_param, need_rank


def _mha_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_rank("MultiheadAttention", x, (2,), "[T, E] (time, embedding)")
    e = x.shape[1]
    check_divides(
        "MultiheadAttention", e, p["num_heads"], "num_heads", f"the embedding size of {x}"
    )
    count = 4 * e * e + (4 * e if p["bias"] else 0)
    return Inferred(x.shape, "float32", count)


registry.register(
    OpDef(
        name="MultiheadAttention",
        category="Attention",
        help="Multi-head self-attention over a [T, E] sequence (query = key = value).",
        params=(
            int_param(
                "num_heads",
                None,
                "Parallel attention heads (must divide E).",
                required=True,
                hi=4096,
            ),
            float_param("dropout", 0.0, "Dropout on attention weights.", lo=0.0, hi=1.0),
            bool_param("bias", True, "Learn projection biases."),
        ),
        arity=(1, 1),
        infer=_mha_infer,
        module=lambda p, ins: (
            modules.SelfAttention,
            {
                "embed_dim": ins[0].shape[1],
                "num_heads": p["num_heads"],
                "dropout": p["dropout"],
                "bias": p["bias"],
            },
        ),
        inferred=("embed_dim",),
        input_hint="[T, E]",
        keywords=("self attention", "transformer", "heads"),
    )
)


def _encoder_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_rank("TransformerEncoderLayer", x, (2,), "[T, E] (time, embedding)")
    e, ff = x.shape[1], p["dim_feedforward"]
    check_divides("TransformerEncoderLayer", e, p["nhead"], "nhead", f"d_model of {x}")
    count = (4 * e * e + 4 * e) + (e * ff + ff) + (ff * e + e) + 4 * e
    return Inferred(x.shape, "float32", count)


registry.register(
    OpDef(
        name="TransformerEncoderLayer",
        category="Attention",
        help="One Transformer encoder block (self-attention + feed-forward) over [T, E].",
        params=(
            int_param(
                "nhead", None, "Attention heads (must divide d_model).", required=True, hi=4096
            ),
            int_param("dim_feedforward", 2048, "Width of the feed-forward layer."),
            float_param("dropout", 0.1, "Dropout rate.", lo=0.0, hi=1.0),
            Param(
                "activation", "choice", "relu", "Feed-forward activation.", choices=("relu", "gelu")
            ),
            bool_param("norm_first", False, "Apply LayerNorm before (not after) each sub-block."),
            float_param("layer_norm_eps", 1e-5, "LayerNorm epsilon.", lo=0.0, hi=1.0),
        ),
        arity=(1, 1),
        infer=_encoder_infer,
        module=lambda p, ins: (
            nn.TransformerEncoderLayer,
            {
                "d_model": ins[0].shape[1],
                "nhead": p["nhead"],
                "dim_feedforward": p["dim_feedforward"],
                "dropout": p["dropout"],
                "activation": p["activation"],
                "layer_norm_eps": p["layer_norm_eps"],
                "batch_first": True,
                "norm_first": p["norm_first"],
            },
        ),
        inferred=("d_model",),
        input_hint="[T, E]",
        keywords=("transformer", "encoder", "bert", "self attention"),
    )
)
