"""Catalog modules read off existing `nn.Module` layers: type -> (op name, params), plus the
helpers the importer shares (batched -> per-sample dimensions, int-or-tuple values)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from torch import nn


class Unsupported(Exception):
    """One node cannot become a catalog op; the message says what and why."""


def int_or_tuple(value: Any) -> Any:
    """An int-or-tuple value as the catalog writes it: equal items -> one int, else a list."""
    if isinstance(value, tuple | list):
        items = list(value)
        if items and all(i == items[0] for i in items) and items[0] is not None:
            return int(items[0])
        return [None if i is None else int(i) for i in items]
    return value


def per_sample_dim(dim: Any, rank: int, what: str = "dim") -> int:
    """A batched dimension index -> the per-sample one (the spec never names the batch)."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise Unsupported(f"'{what}' must be a constant integer, got {dim!r}")
    if dim >= 0:
        if dim == 0:
            raise Unsupported(f"'{what}' 0 is the batch dimension; a spec works per sample")
        return dim - 1
    if -dim > rank:
        raise Unsupported(f"'{what}' {dim} reaches the batch dimension; a spec works per sample")
    return dim


def meta_dims(meta: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in meta.shape)


def bind_args(
    args: Sequence[Any], kwargs: dict[str, Any], names: Sequence[str], defaults: dict[str, Any]
) -> dict[str, Any]:
    out = dict(defaults)
    if len(args) > len(names):
        raise Unsupported(f"takes at most {len(names)} arguments here, got {len(args)}")
    out.update(zip(names, args, strict=False))
    for k, v in kwargs.items():
        if k not in names and k not in ("inplace", "_stacklevel"):
            raise Unsupported(f"the argument {k}={v!r} has no catalog equivalent")
        out[k] = v
    return out


@dataclass
class Emit:
    """What one fx node becomes: a catalog op with params over input values."""

    op: str
    params: dict[str, Any]
    inputs: list[Any]  # fx nodes (tensors) in order
    module: nn.Module | None = None  # whose state dict the node carries


# ------------------------------------------------------------------ modules -> ops

ModuleRule = Callable[[nn.Module, tuple[int, ...]], tuple[str, dict[str, Any]]]


def _no_padding_mode(m: nn.Module) -> None:
    if getattr(m, "padding_mode", "zeros") != "zeros":
        raise Unsupported(f"padding_mode={m.padding_mode!r} (the catalog pads with zeros)")


def _conv(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    _no_padding_mode(m)
    params = {
        "out_channels": m.out_channels,
        "kernel_size": int_or_tuple(m.kernel_size),
        "stride": int_or_tuple(m.stride),
        "padding": m.padding if isinstance(m.padding, str) else int_or_tuple(m.padding),
        "dilation": int_or_tuple(m.dilation),
        "groups": m.groups,
        "bias": m.bias is not None,
    }
    return type(m).__name__, params


def _convt(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    _no_padding_mode(m)
    name, params = _conv(m, shape)
    params["output_padding"] = int_or_tuple(m.output_padding)
    return name, params


def _no_ceil(m: Any) -> None:
    if getattr(m, "ceil_mode", False):
        raise Unsupported("ceil_mode=True (the catalog's pooling rounds down)")
    if getattr(m, "return_indices", False):
        raise Unsupported("return_indices=True")


def _maxpool(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    _no_ceil(m)
    return type(m).__name__, {
        "kernel_size": int_or_tuple(m.kernel_size),
        "stride": int_or_tuple(m.stride) if m.stride is not None else None,
        "padding": int_or_tuple(m.padding),
        "dilation": int_or_tuple(m.dilation),
    }


def _avgpool(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    _no_ceil(m)
    if getattr(m, "divisor_override", None) is not None:
        raise Unsupported("divisor_override")
    return type(m).__name__, {
        "kernel_size": int_or_tuple(m.kernel_size),
        "stride": int_or_tuple(m.stride) if m.stride is not None else None,
        "padding": int_or_tuple(m.padding),
        "count_include_pad": bool(m.count_include_pad),
    }


def _adaptive(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    _no_ceil(m)
    return type(m).__name__, {"output_size": int_or_tuple(m.output_size)}


def _upsample(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    if m.mode not in ("nearest", "bilinear"):
        raise Unsupported(f"mode={m.mode!r} (the catalog has 'nearest' and 'bilinear')")
    if m.align_corners:
        raise Unsupported("align_corners=True")
    scale = m.scale_factor
    if isinstance(scale, tuple | list):
        if len(set(scale)) != 1:
            raise Unsupported(f"a different scale_factor per dimension {scale}")
        scale = scale[0]
    if m.size is not None:
        return "Upsample", {"size": int_or_tuple(m.size), "scale_factor": None, "mode": m.mode}
    return "Upsample", {"scale_factor": float(scale), "mode": m.mode}


def _batchnorm(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    if not m.track_running_stats:
        raise Unsupported("track_running_stats=False")
    if m.momentum is None:
        raise Unsupported("momentum=None (cumulative average)")
    return type(m).__name__, {"eps": m.eps, "momentum": m.momentum, "affine": m.affine}


def _instancenorm(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    if m.track_running_stats and m.momentum is None:
        raise Unsupported("momentum=None (cumulative average)")
    return type(m).__name__, {
        "eps": m.eps,
        "momentum": m.momentum if m.momentum is not None else 0.1,
        "affine": m.affine,
        "track_running_stats": m.track_running_stats,
    }


def _last_dim_norm(m: Any, shape: tuple[int, ...]) -> None:
    ns = tuple(m.normalized_shape)
    if len(ns) != 1 or not shape or ns[0] != shape[-1]:
        raise Unsupported(
            f"normalized_shape={list(ns)} (the catalog normalises the last dimension only)"
        )


def layernorm_rule(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    _last_dim_norm(m, shape)
    if m.elementwise_affine and m.bias is None:
        raise Unsupported("bias=False (the catalog's LayerNorm has a bias when affine)")
    return "LayerNorm", {"eps": m.eps, "elementwise_affine": m.elementwise_affine}


def _rmsnorm(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    _last_dim_norm(m, shape)
    return "RMSNorm", {"eps": m.eps, "elementwise_affine": m.elementwise_affine}


def _softmax(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    if m.dim is None:
        raise Unsupported("dim=None (name the dimension)")
    return type(m).__name__, {"dim": per_sample_dim(m.dim, len(shape))}


def _flatten(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    rank = len(shape)
    return "Flatten", {
        "start_dim": per_sample_dim(m.start_dim, rank, "start_dim"),
        "end_dim": per_sample_dim(m.end_dim, rank, "end_dim"),
    }


def encoder_layer_rule(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    if not m.self_attn.batch_first:
        raise Unsupported("batch_first=False (the catalog's layer is batch first: [B, T, E])")
    relu_or_gelu = getattr(m, "activation_relu_or_gelu", 0)
    if relu_or_gelu not in (1, 2):
        raise Unsupported("an activation other than relu or gelu")
    if m.linear1.bias is None or m.norm1.bias is None:
        raise Unsupported("bias=False")
    return "TransformerEncoderLayer", {
        "nhead": m.self_attn.num_heads,
        "dim_feedforward": m.linear1.out_features,
        "dropout": m.dropout.p,
        "activation": "relu" if relu_or_gelu == 1 else "gelu",
        "norm_first": m.norm_first,
        "layer_norm_eps": m.norm1.eps,
    }


def _recurrent(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    if not m.batch_first:
        raise Unsupported("batch_first=False (the catalog's layer is batch first: [B, T, F])")
    if getattr(m, "proj_size", 0):
        raise Unsupported("proj_size")
    return type(m).__name__, {
        "hidden_size": m.hidden_size,
        "num_layers": m.num_layers,
        "bidirectional": m.bidirectional,
        "dropout": float(m.dropout),
        "bias": m.bias,
        "output": "sequence",
    }


def _mha(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    if not m.batch_first:
        raise Unsupported("batch_first=False (the catalog's layer is batch first: [B, T, E])")
    if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
        raise Unsupported("kdim/vdim, add_bias_kv or add_zero_attn")
    return "MultiheadAttention", {
        "num_heads": m.num_heads,
        "dropout": m.dropout,
        "bias": m.in_proj_bias is not None,
    }


def _embedding(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
    if m.max_norm is not None:
        raise Unsupported("max_norm (renormalises the weights in forward)")
    return "Embedding", {"num_embeddings": m.num_embeddings, "embedding_dim": m.embedding_dim}


def _simple(name: str, **attrs: str) -> ModuleRule:
    def rule(m: Any, shape: tuple[int, ...]) -> tuple[str, dict[str, Any]]:
        return name, {param: getattr(m, attr) for param, attr in attrs.items()}

    return rule


MODULE_RULES: dict[type[nn.Module], ModuleRule] = {
    nn.Linear: lambda m, s: (
        "Linear",
        {"out_features": m.out_features, "bias": m.bias is not None},
    ),
    nn.Conv1d: _conv,
    nn.Conv2d: _conv,
    nn.Conv3d: _conv,
    nn.ConvTranspose2d: _convt,
    nn.MaxPool1d: _maxpool,
    nn.MaxPool2d: _maxpool,
    nn.MaxPool3d: _maxpool,
    nn.AvgPool1d: _avgpool,
    nn.AvgPool2d: _avgpool,
    nn.AdaptiveAvgPool1d: _adaptive,
    nn.AdaptiveAvgPool2d: _adaptive,
    nn.AdaptiveMaxPool2d: _adaptive,
    nn.Upsample: _upsample,
    nn.PixelShuffle: _simple("PixelShuffle", upscale_factor="upscale_factor"),
    nn.BatchNorm1d: _batchnorm,
    nn.BatchNorm2d: _batchnorm,
    nn.LayerNorm: layernorm_rule,
    nn.GroupNorm: _simple("GroupNorm", num_groups="num_groups", eps="eps", affine="affine"),
    nn.InstanceNorm1d: _instancenorm,
    nn.InstanceNorm2d: _instancenorm,
    nn.RMSNorm: _rmsnorm,
    nn.ReLU: _simple("ReLU"),
    nn.GELU: _simple("GELU", approximate="approximate"),
    nn.SiLU: _simple("SiLU"),
    nn.LeakyReLU: _simple("LeakyReLU", negative_slope="negative_slope"),
    nn.ELU: _simple("ELU", alpha="alpha"),
    nn.Tanh: _simple("Tanh"),
    nn.Sigmoid: _simple("Sigmoid"),
    nn.Softmax: _softmax,
    nn.LogSoftmax: _softmax,
    nn.PReLU: lambda m, s: ("PReLU", {"num_parameters": m.num_parameters}),
    nn.Mish: _simple("Mish"),
    nn.Hardswish: _simple("Hardswish"),
    nn.Softplus: _simple("Softplus", beta="beta", threshold="threshold"),
    nn.LSTM: _recurrent,
    nn.GRU: _recurrent,
    nn.MultiheadAttention: _mha,
    nn.TransformerEncoderLayer: encoder_layer_rule,
    nn.Embedding: _embedding,
    nn.Dropout: _simple("Dropout", p="p"),
    nn.Dropout2d: _simple("Dropout2d", p="p"),
    nn.Flatten: _flatten,
    nn.Identity: _simple("Identity"),
}
# Modules that return a tuple; the spec op is their output 0 (read through getitem 0).
TUPLE_MODULES = (nn.LSTM, nn.GRU, nn.MultiheadAttention)


def torch_name(m: nn.Module) -> str:
    cls = type(m)
    if cls.__module__.startswith("torch.nn"):
        return f"nn.{cls.__name__}"
    return cls.__name__
