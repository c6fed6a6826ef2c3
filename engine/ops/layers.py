"""Ops with weights or windows: Linear, convolution, pooling, normalisation, embedding,
recurrent and attention layers, dropout."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import nn

from engine.ops import modules
from engine.ops.registry import In, Inferred, OpDef, Param, ShapeError, registry
from engine.ops.rules import (
    bool_param,
    check_divides,
    float_param,
    int_param,
    need_min_rank,
    need_rank,
    windowed,
)

P = Mapping[str, Any]

# ---------------------------------------------------------------- Linear


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
    )
)

# ---------------------------------------------------------------- Convolution

_KERNEL = int_param("kernel_size", 3, "Size of the (square) window.", hi=4096)
_STRIDE = int_param("stride", 1, "Step of the window.", hi=4096)
_PADDING = int_param("padding", 0, "Zeros added on each side.", lo=0, hi=4096)
_DILATION = int_param("dilation", 1, "Spacing between window elements.", hi=4096)
_GROUPS = int_param("groups", 1, "Blocked connections from input to output channels.", hi=65536)


def _conv_params() -> tuple[Param, ...]:
    return (
        int_param("out_channels", None, "Number of output channels.", required=True),
        _KERNEL,
        _STRIDE,
        _PADDING,
        _DILATION,
        _GROUPS,
        bool_param("bias", True, "Learn an additive bias."),
    )


def _conv_infer(name: str, spatial: int) -> Any:
    layout = "[C, L]" if spatial == 1 else "[C, H, W]"

    def infer(p: P, ins: list[In]) -> Inferred:
        (x,) = ins
        need_rank(name, x, (spatial + 1,), layout)
        cin, cout, g = x.shape[0], p["out_channels"], p["groups"]
        check_divides(name, cin, g, "groups", f"the input channels of {x}")
        check_divides(name, cout, g, "groups", "out_channels")
        out = windowed(name, x, spatial, p["kernel_size"], p["stride"], p["padding"], p["dilation"])
        count = cout * (cin // g) * p["kernel_size"] ** spatial + (cout if p["bias"] else 0)
        return Inferred((cout, *out), "float32", count)

    return infer


def _conv_module(cls: type[nn.Module]) -> Any:
    def module(p: P, ins: list[In]) -> tuple[type[nn.Module], dict[str, Any]]:
        return cls, {
            "in_channels": ins[0].shape[0],
            "out_channels": p["out_channels"],
            "kernel_size": p["kernel_size"],
            "stride": p["stride"],
            "padding": p["padding"],
            "dilation": p["dilation"],
            "groups": p["groups"],
            "bias": p["bias"],
        }

    return module


registry.register(
    OpDef(
        name="Conv1d",
        category="Convolution",
        help="1-d convolution over a [channels, length] input.",
        params=_conv_params(),
        arity=(1, 1),
        infer=_conv_infer("Conv1d", 1),
        module=_conv_module(nn.Conv1d),
        inferred=("in_channels",),
        input_hint="[C, L]",
    )
)
registry.register(
    OpDef(
        name="Conv2d",
        category="Convolution",
        help="2-d convolution over a [channels, height, width] input.",
        params=_conv_params(),
        arity=(1, 1),
        infer=_conv_infer("Conv2d", 2),
        module=_conv_module(nn.Conv2d),
        inferred=("in_channels",),
        input_hint="[C, H, W]",
    )
)


def _convt_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_rank("ConvTranspose2d", x, (3,), "[C, H, W]")
    cin, cout, g = x.shape[0], p["out_channels"], p["groups"]
    check_divides("ConvTranspose2d", cin, g, "groups", f"the input channels of {x}")
    check_divides("ConvTranspose2d", cout, g, "groups", "out_channels")
    k, s, pad, d, op = (
        p["kernel_size"],
        p["stride"],
        p["padding"],
        p["dilation"],
        p["output_padding"],
    )
    if op >= s and op >= d:
        raise ShapeError(
            f"ConvTranspose2d 'output_padding' ({op}) must be smaller than stride ({s}) or dilation ({d})",
            field="output_padding",
        )
    out = tuple((h - 1) * s - 2 * pad + d * (k - 1) + op + 1 for h in x.shape[1:])
    if any(o < 1 for o in out):
        raise ShapeError(f"ConvTranspose2d padding {pad} leaves an empty output for the input {x}")
    count = cin * (cout // g) * k * k + (cout if p["bias"] else 0)
    return Inferred((cout, *out), "float32", count)


registry.register(
    OpDef(
        name="ConvTranspose2d",
        category="Convolution",
        help="2-d transposed convolution (learned upsampling) over [C, H, W].",
        params=(
            int_param("out_channels", None, "Number of output channels.", required=True),
            _KERNEL,
            _STRIDE,
            _PADDING,
            int_param(
                "output_padding", 0, "Extra size added to one side of the output.", lo=0, hi=4096
            ),
            _DILATION,
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
                "kernel_size": p["kernel_size"],
                "stride": p["stride"],
                "padding": p["padding"],
                "output_padding": p["output_padding"],
                "groups": p["groups"],
                "bias": p["bias"],
                "dilation": p["dilation"],
            },
        ),
        inferred=("in_channels",),
        input_hint="[C, H, W]",
    )
)

# ---------------------------------------------------------------- Pooling


def _pool_stride(p: P) -> int:
    return p["stride"] if p["stride"] is not None else p["kernel_size"]


def _maxpool(name: str, spatial: int, cls: type[nn.Module]) -> OpDef:
    layout = "[C, L]" if spatial == 1 else "[C, H, W]"

    def infer(p: P, ins: list[In]) -> Inferred:
        (x,) = ins
        need_rank(name, x, (spatial + 1,), layout)
        k, d, pad = p["kernel_size"], p["dilation"], p["padding"]
        if 2 * pad > d * (k - 1) + 1:
            raise ShapeError(
                f"{name} 'padding' ({pad}) must be at most half the window ({d * (k - 1) + 1})",
                field="padding",
            )
        out = windowed(name, x, spatial, k, _pool_stride(p), pad, d)
        return Inferred((x.shape[0], *out), "float32", 0)

    return OpDef(
        name=name,
        category="Pooling",
        help=f"Maximum over sliding windows of a {layout} input.",
        params=(
            int_param("kernel_size", 2, "Size of the window.", hi=4096),
            Param(
                "stride",
                "int",
                None,
                "Step of the window (default: kernel_size).",
                min=1,
                max=4096,
                nullable=True,
            ),
            int_param(
                "padding", 0, "Implicit negative-infinity padding on each side.", lo=0, hi=4096
            ),
            _DILATION,
        ),
        arity=(1, 1),
        infer=infer,
        module=lambda p, ins: (
            cls,
            {
                "kernel_size": p["kernel_size"],
                "stride": _pool_stride(p),
                "padding": p["padding"],
                "dilation": p["dilation"],
            },
        ),
        input_hint=layout,
    )


registry.register(_maxpool("MaxPool1d", 1, nn.MaxPool1d))
registry.register(_maxpool("MaxPool2d", 2, nn.MaxPool2d))


def _avgpool_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_rank("AvgPool2d", x, (3,), "[C, H, W]")
    k, pad = p["kernel_size"], p["padding"]
    if 2 * pad > k:
        raise ShapeError(
            f"AvgPool2d 'padding' ({pad}) must be at most half of kernel_size ({k})",
            field="padding",
        )
    out = windowed("AvgPool2d", x, 2, k, _pool_stride(p), pad, 1)
    return Inferred((x.shape[0], *out), "float32", 0)


registry.register(
    OpDef(
        name="AvgPool2d",
        category="Pooling",
        help="Average over sliding windows of a [C, H, W] input.",
        params=(
            int_param("kernel_size", 2, "Size of the window.", hi=4096),
            Param(
                "stride",
                "int",
                None,
                "Step of the window (default: kernel_size).",
                min=1,
                max=4096,
                nullable=True,
            ),
            int_param("padding", 0, "Zero padding on each side.", lo=0, hi=4096),
            bool_param("count_include_pad", True, "Count padding zeros in the average."),
        ),
        arity=(1, 1),
        infer=_avgpool_infer,
        module=lambda p, ins: (
            nn.AvgPool2d,
            {
                "kernel_size": p["kernel_size"],
                "stride": _pool_stride(p),
                "padding": p["padding"],
                "count_include_pad": p["count_include_pad"],
            },
        ),
        input_hint="[C, H, W]",
    )
)


def _adaptive_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    need_rank("AdaptiveAvgPool2d", x, (3,), "[C, H, W]")
    h, w = p["output_size"]
    return Inferred((x.shape[0], h, w), "float32", 0)


registry.register(
    OpDef(
        name="AdaptiveAvgPool2d",
        category="Pooling",
        help="Average-pool a [C, H, W] input to a fixed [C, h, w] whatever its size.",
        params=(
            Param(
                "output_size",
                "int_list",
                (1, 1),
                "Target [h, w].",
                min=1,
                max=65536,
                min_items=2,
                max_items=2,
            ),
        ),
        arity=(1, 1),
        infer=_adaptive_infer,
        module=lambda p, ins: (nn.AdaptiveAvgPool2d, {"output_size": tuple(p["output_size"])}),
        input_hint="[C, H, W]",
    )
)

# ---------------------------------------------------------------- Normalization

_EPS = float_param("eps", 1e-5, "Added to the variance for numerical stability.", lo=0.0, hi=1.0)


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
            _EPS,
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
            _EPS,
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
            _EPS,
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
    )
)

# ---------------------------------------------------------------- Regularization and Embedding

registry.register(
    OpDef(
        name="Dropout",
        category="Regularization",
        help="Zero random elements with probability p while training; identity in eval mode.",
        params=(float_param("p", 0.5, "Probability of zeroing an element.", lo=0.0, hi=1.0),),
        arity=(1, 1),
        infer=lambda p, ins: Inferred(ins[0].shape, "float32", 0),
        module=lambda p, ins: (nn.Dropout, {"p": p["p"]}),
        input_hint="any",
    )
)


def _embedding_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    n, d = p["num_embeddings"], p["embedding_dim"]
    return Inferred((*x.shape, d), "float32", n * d)


registry.register(
    OpDef(
        name="Embedding",
        category="Embedding",
        help="Look up a learned vector for each integer token id.",
        params=(
            int_param(
                "num_embeddings",
                None,
                "Vocabulary size (ids run 0..num_embeddings-1).",
                required=True,
            ),
            int_param("embedding_dim", None, "Size of each vector.", required=True),
        ),
        arity=(1, 1),
        infer=_embedding_infer,
        module=lambda p, ins: (
            nn.Embedding,
            {"num_embeddings": p["num_embeddings"], "embedding_dim": p["embedding_dim"]},
        ),
        input_dtypes=("int64",),
        input_hint="int64 ids, any shape",
    )
)

# ---------------------------------------------------------------- Recurrent


def _recurrent(name: str, gates: int, cls: type[nn.Module]) -> OpDef:
    def infer(p: P, ins: list[In]) -> Inferred:
        (x,) = ins
        need_rank(name, x, (2,), "[T, F] (time, features)")
        h, layers = p["hidden_size"], p["num_layers"]
        dirs = 2 if p["bidirectional"] else 1
        count, width = 0, x.shape[1]
        for _ in range(layers):
            per_dir = gates * h * width + gates * h * h + (2 * gates * h if p["bias"] else 0)
            count += dirs * per_dir
            width = dirs * h
        shape = (x.shape[0], dirs * h) if p["output"] == "sequence" else (dirs * h,)
        return Inferred(shape, "float32", count)

    return OpDef(
        name=name,
        category="Recurrent",
        help=f"{name} over a [T, F] sequence (batch first); output the whole sequence or the last hidden state.",
        params=(
            int_param("hidden_size", None, "Features in the hidden state.", required=True),
            int_param("num_layers", 1, "Stacked recurrent layers.", hi=64),
            bool_param("bidirectional", False, "Run forwards and backwards and concatenate."),
            float_param("dropout", 0.0, "Dropout between stacked layers.", lo=0.0, hi=1.0),
            bool_param("bias", True, "Learn biases."),
            Param(
                "output",
                "choice",
                "sequence",
                "'sequence': [T, D*H]; 'last': final hidden state [D*H].",
                choices=("sequence", "last"),
            ),
        ),
        arity=(1, 1),
        infer=infer,
        module=lambda p, ins: (
            cls,
            {
                "input_size": ins[0].shape[1],
                "hidden_size": p["hidden_size"],
                "num_layers": p["num_layers"],
                "bias": p["bias"],
                "dropout": p["dropout"],
                "bidirectional": p["bidirectional"],
                "output": p["output"],
            },
        ),
        inferred=("input_size",),
        input_hint="[T, F]",
    )


registry.register(_recurrent("LSTM", 4, modules.LSTMLayer))
registry.register(_recurrent("GRU", 3, modules.GRULayer))

# ---------------------------------------------------------------- Attention


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
    )
)
