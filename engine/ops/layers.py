"""Ops with weights or windows: Linear, convolution, pooling, normalisation, embedding,
recurrent and attention layers, dropout."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from torch import nn

from engine.ops import modules
from engine.ops.registry import In, Inferred, OpDef, Param, ShapeError, registry
from engine.ops.rules import (
    as_written,
    bool_param,
    check_divides,
    check_pool_padding,
    float_param,
    int_param,
    need_min_rank,
    need_rank,
    per_dim,
    shown,
    size_param,
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
        keywords=("dense", "fully connected", "mlp", "projection", "affine"),
    )
)

# ---------------------------------------------------------------- Convolution

_LAYOUTS = {1: "[C, L]", 2: "[C, H, W]", 3: "[C, D, H, W]"}
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
    layout = _LAYOUTS[spatial]

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
            input_hint=_LAYOUTS[_spatial],
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

# ---------------------------------------------------------------- Pooling


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
    name, layout = cls.__name__, _LAYOUTS[spatial]

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
    name, layout = cls.__name__, _LAYOUTS[spatial]

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
    name, layout = cls.__name__, _LAYOUTS[spatial]

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
        keywords=("group normalization",),
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
        keywords=("regularization", "drop"),
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
        keywords=("lookup", "token", "word vectors", "vocabulary"),
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
        keywords=("recurrent", "rnn", "sequence", "time series", "memory"),
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

# ---------------------------------------------------------------- More regularization and norms


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
    name, layout = cls.__name__, _LAYOUTS[spatial]

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
            _EPS,
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

# ---------------------------------------------------------------- Upsampling


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

# ---------------------------------------------------------------- Decoder and positions


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
