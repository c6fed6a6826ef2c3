"""Helpers the shape rules share: rank checks, window arithmetic, dimension indices."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.ops.registry import In, Inferred, Param, Shape, ShapeError, fmt_shape


def need_rank(op: str, inp: In, ranks: tuple[int, ...], layout: str) -> None:
    """Raise unless the input has one of `ranks` per-sample dimensions."""
    if len(inp.shape) not in ranks:
        raise ShapeError(f"{op} needs a {layout} input, got {inp}")


def need_min_rank(op: str, inp: In, rank: int, layout: str) -> None:
    """Raise unless the input has at least `rank` per-sample dimensions."""
    if len(inp.shape) < rank:
        raise ShapeError(f"{op} needs a {layout} input, got {inp}")


def same_shape(ins: list[In], shape: Shape, dtype: str = "float32") -> Inferred:
    """Shape rule for ops that keep the shape and have no parameters."""
    return Inferred(tuple(shape), dtype, 0)


def window_out(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output length of a convolution or pooling window (PyTorch's floor formula)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def per_dim(value: Any, spatial: int) -> tuple[int, ...]:
    """PyTorch's `_ntuple`: an int means the same size in every spatial dimension."""
    if isinstance(value, list | tuple):
        return tuple(value)
    return (value,) * spatial


def as_written(value: Any) -> Any:
    """A parameter the way a person writes it in Python: an int stays an int, a list a tuple."""
    return tuple(value) if isinstance(value, list) else value


def shown(value: Any) -> str:
    """An int-or-tuple value in a message: 3 or (3, 1)."""
    return str(tuple(value)) if isinstance(value, list | tuple) else str(value)


def windowed(
    op: str, inp: In, spatial: int, kernel: Any, stride: Any, padding: Any, dilation: Any
) -> tuple[int, ...]:
    """Spatial output sizes (each size parameter an int or one per dimension), raising a
    message naming the input if any would be empty."""
    sizes = inp.shape[-spatial:]
    k, s, p, d = (per_dim(v, spatial) for v in (kernel, stride, padding, dilation))
    out = tuple(window_out(*args) for args in zip(sizes, k, s, p, d, strict=True))
    if any(o < 1 for o in out):
        reach = [dd * (kk - 1) + 1 for kk, dd in zip(k, d, strict=True)]
        reach_text = str(reach[0]) if len(set(reach)) == 1 else shown(reach)
        raise ShapeError(
            f"{op} window of {reach_text} (kernel_size {shown(kernel)}, dilation {shown(dilation)}) "
            f"does not fit the input {inp} with padding {shown(padding)}"
        )
    return out


def check_pool_padding(op: str, kernel: Any, padding: Any, dilation: Any, spatial: int) -> None:
    """Raise a bad_param error on 'padding' unless it is at most half of kernel_size in every
    dimension, as PyTorch's pooling checks it (the dilation does not widen the limit)."""
    k, p, d = (per_dim(v, spatial) for v in (kernel, padding, dilation))
    for i, (kk, pp, dd) in enumerate(zip(k, p, d, strict=True)):
        if pp <= kk // 2:
            continue
        where = (
            f" in spatial dimension {i}"
            if isinstance(kernel, list | tuple) or isinstance(padding, list | tuple)
            else ""
        )
        why = f"; PyTorch does not count dilation {dd} here" if dd > 1 else ""
        raise ShapeError(
            f"{op} 'padding' {pp} must be at most half of kernel_size {kk}{where} "
            f"(at most {kk // 2}{why})",
            field="padding",
        )


def size_param(
    name: str,
    default: Any,
    help: str,
    spatial: int,
    lo: int = 1,
    hi: int = 4096,
    **kw: Any,
) -> Param:
    """PyTorch's "int or tuple" size parameter (kernel_size, stride, padding, dilation)."""
    return Param(name, "int_or_tuple", default, help, min=lo, max=hi, dims=spatial, **kw)


def sample_dim(op: str, dim: int, rank: int, name: str = "dim") -> int:
    """Normalise a per-sample dimension index (negative counts from the end)."""
    if not -rank <= dim < rank:
        raise ShapeError(
            f"{op} '{name}' must be between {-rank} and {rank - 1} for a {rank}-d input, got {dim}",
            field=name,
        )
    return dim % rank


def batched_dim(dim: int, rank: int) -> int:
    """The per-sample dimension `dim` counted in the batched tensor (batch is dimension 0)."""
    return dim % rank + 1


def check_divides(op: str, value: int, by: int, field: str, what: str) -> None:
    """Raise a bad_param error unless `by` divides `value`."""
    if value % by:
        raise ShapeError(f"{op} '{field}' = {by} must divide {what} ({value})", field=field)


def describe_ins(ins: list[In]) -> str:
    """'[64] from fc1 and [32] from fc2' for error messages."""
    parts = [str(i) for i in ins]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def int_param(
    name: str, default: Any, help: str, lo: int = 1, hi: int = 2**31 - 1, **kw: Any
) -> Param:
    """An integer parameter with the usual bounds."""
    return Param(name, "int", default, help, min=lo, max=hi, **kw)


def float_param(
    name: str, default: float, help: str, lo: float | None = 0.0, hi: float | None = None
) -> Param:
    """A float parameter."""
    return Param(name, "float", default, help, min=lo, max=hi)


def bool_param(name: str, default: bool, help: str) -> Param:
    """A boolean parameter."""
    return Param(name, "bool", default, help)


def first(ins: list[In]) -> In:
    """The single input of a one-input op."""
    return ins[0]


__all__ = [
    "Mapping",
    "batched_dim",
    "bool_param",
    "check_divides",
    "check_pool_padding",
    "describe_ins",
    "first",
    "float_param",
    "fmt_shape",
    "int_param",
    "need_min_rank",
    "need_rank",
    "as_written",
    "per_dim",
    "same_shape",
    "shown",
    "size_param",
    "sample_dim",
    "windowed",
]
