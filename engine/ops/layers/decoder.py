"""The Transformer decoder block, and PositionalEmbedding: a learned vector per position."""

from __future__ import annotations

from engine.ops import modules
from engine.ops.layers.common import P
from engine.ops.registry import In, Inferred, OpDef, Param, ShapeError, registry
from engine.ops.rules import bool_param, check_divides, float_param, int_param, need_rank


def _decoder_infer(p: P, ins: list[In]) -> Inferred:
    tgt, memory = ins
    need_rank("TransformerDecoderLayer", tgt, (2,), "[T, E] (time, embedding)")
    need_rank("TransformerDecoderLayer", memory, (2,), "[S, E] memory")
    e, ff = tgt.shape[1], p["dim_feedforward"]
    if memory.shape[1] != e:
        raise ShapeError(
            f"TransformerDecoderLayer needs memory with the target's embedding size {e}, "
            f"got {tgt} and {memory}"
        )
    check_divides("TransformerDecoderLayer", e, p["nhead"], "nhead", f"d_model of {tgt}")
    count = 2 * (4 * e * e + 4 * e) + (e * ff + ff) + (ff * e + e) + 6 * e
    return Inferred(tgt.shape, "float32", count)


registry.register(
    OpDef(
        name="TransformerDecoderLayer",
        category="Attention",
        help="One Transformer decoder block: (causal) self-attention over the target [T, E], "
        "attention to the memory [S, E] (second input), then feed-forward.",
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
            bool_param("causal", True, "Each target position sees only itself and earlier ones."),
        ),
        arity=(2, 2),
        infer=_decoder_infer,
        module=lambda p, ins: (
            modules.DecoderLayer,
            {
                "d_model": ins[0].shape[1],
                "nhead": p["nhead"],
                "dim_feedforward": p["dim_feedforward"],
                "dropout": p["dropout"],
                "activation": p["activation"],
                "layer_norm_eps": p["layer_norm_eps"],
                "norm_first": p["norm_first"],
                "causal": p["causal"],
            },
        ),
        inferred=("d_model",),
        input_hint="[T, E] target, then [S, E] memory",
        torch_name="nn.TransformerDecoderLayer",
        keywords=("transformer", "decoder", "cross attention", "gpt", "seq2seq"),
    )
)


def _positional_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_rank("PositionalEmbedding", x, (2,), "[T, E] (time, embedding)")
    if x.shape[0] > p["max_len"]:
        raise ShapeError(
            f"PositionalEmbedding 'max_len' ({p['max_len']}) is shorter than the sequence {x}",
            field="max_len",
        )
    return Inferred(x.shape, "float32", p["max_len"] * x.shape[1])


registry.register(
    OpDef(
        name="PositionalEmbedding",
        category="Embedding",
        help="Add a learned vector per position to a [T, E] sequence (as GPT-2 does).",
        params=(
            int_param("max_len", None, "Longest sequence it has positions for.", required=True),
        ),
        arity=(1, 1),
        infer=_positional_infer,
        module=lambda p, ins: (
            modules.PositionalEmbedding,
            {"max_len": p["max_len"], "embedding_dim": ins[0].shape[1]},
        ),
        inferred=("embedding_dim",),
        input_hint="[T, E]",
        keywords=("position", "learned positional encoding", "transformer", "wpe"),
    )
)
