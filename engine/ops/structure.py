"""Ops that move data around without weights: Flatten, Reshape, Permute, Identity (Shape)
and Add, Mul, Concat (Merge)."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from functools import reduce
from typing import Any

import torch
from torch import fx, nn

from engine.ops.registry import (
    ANY_DTYPE,
    FunctionCall,
    In,
    Inferred,
    OpDef,
    Param,
    ShapeError,
    registry,
)
from engine.ops.rules import batched_dim, describe_ins, sample_dim

P = Mapping[str, Any]


def _equal_dtypes(name: str, ins: list[In]) -> str:
    dtypes = {i.dtype for i in ins}
    if len(dtypes) > 1:
        got = " and ".join(f"{i.dtype} from {i.source}" for i in ins)
        raise ShapeError(f"{name} needs inputs of one dtype, got {got}", code="dtype_mismatch")
    return ins[0].dtype


# ---------------------------------------------------------------- Flatten


def _flatten_dims(p: P, ins: list[In]) -> tuple[int, int]:
    rank = len(ins[0].shape)
    start = sample_dim("Flatten", p["start_dim"], rank, "start_dim")
    end = sample_dim("Flatten", p["end_dim"], rank, "end_dim")
    if start > end:
        raise ShapeError(
            f"Flatten 'start_dim' ({p['start_dim']}) comes after 'end_dim' ({p['end_dim']}) for {ins[0]}",
            field="start_dim",
        )
    return start, end


def _flatten_infer(p: P, ins: list[In]) -> Inferred:
    start, end = _flatten_dims(p, ins)
    s = ins[0].shape
    return Inferred((*s[:start], math.prod(s[start : end + 1]), *s[end + 1 :]), ins[0].dtype, 0)


def _flatten_module(p: P, ins: list[In]) -> tuple[type[nn.Module], dict[str, Any]]:
    start, end = _flatten_dims(p, ins)
    return nn.Flatten, {"start_dim": start + 1, "end_dim": end + 1}


registry.register(
    OpDef(
        name="Flatten",
        category="Shape",
        help="Merge per-sample dimensions start_dim..end_dim into one (default: all of them).",
        params=(
            Param("start_dim", "int", 0, "First per-sample dimension to merge.", min=-64, max=63),
            Param("end_dim", "int", -1, "Last per-sample dimension to merge.", min=-64, max=63),
        ),
        arity=(1, 1),
        infer=_flatten_infer,
        module=_flatten_module,
        input_dtypes=ANY_DTYPE,
        input_hint="any",
    )
)

# ---------------------------------------------------------------- Reshape


def _reshape_target(p: P, ins: list[In]) -> tuple[int, ...]:
    x = ins[0]
    shape = list(p["shape"])
    if any(d == 0 for d in shape):
        raise ShapeError("Reshape 'shape' may not contain 0", field="shape")
    if shape.count(-1) > 1:
        raise ShapeError("Reshape 'shape' may contain at most one -1", field="shape")
    total = math.prod(x.shape)
    known = math.prod(d for d in shape if d != -1)
    if -1 in shape:
        if total % known:
            raise ShapeError(f"Reshape cannot fit {x} ({total} values) into {shape}", field="shape")
        shape[shape.index(-1)] = total // known
    elif known != total:
        raise ShapeError(
            f"Reshape to {shape} needs {known} values per sample, got {x} ({total} values)",
            field="shape",
        )
    return tuple(shape)


def _reshape_fx(g: fx.Graph, args: list[fx.Node], p: P, ins: list[In], name: str) -> fx.Node:
    return g.create_node(
        "call_function", torch.reshape, (args[0], (-1, *_reshape_target(p, ins))), name=name
    )


def _reshape_source(names: list[str], p: P, ins: list[In]) -> str:
    return f"torch.reshape({names[0]}, {(-1, *_reshape_target(p, ins))!r})"


registry.register(
    OpDef(
        name="Reshape",
        category="Shape",
        help="Give each sample a new shape with the same number of values (one -1 is inferred).",
        params=(
            Param(
                "shape",
                "int_list",
                None,
                "Per-sample target shape, e.g. [4, 16].",
                required=True,
                min=-1,
                max=2**31 - 1,
                min_items=1,
                max_items=8,
            ),
        ),
        arity=(1, 1),
        infer=lambda p, ins: Inferred(_reshape_target(p, ins), ins[0].dtype, 0),
        function=FunctionCall(
            fx=_reshape_fx,
            source=_reshape_source,
            apply=lambda xs, p, ins: torch.reshape(xs[0], (-1, *_reshape_target(p, ins))),
        ),
        input_dtypes=ANY_DTYPE,
        input_hint="any",
    )
)

# ---------------------------------------------------------------- Permute


def _permutation(p: P, ins: list[In]) -> tuple[int, ...]:
    x = ins[0]
    dims = list(p["dims"])
    if sorted(dims) != list(range(len(x.shape))):
        raise ShapeError(
            f"Permute 'dims' must order 0..{len(x.shape) - 1} once each for {x}, got {dims}",
            field="dims",
        )
    return (0, *[d + 1 for d in dims])


def _permute_infer(p: P, ins: list[In]) -> Inferred:
    order = _permutation(p, ins)
    return Inferred(tuple(ins[0].shape[d - 1] for d in order[1:]), ins[0].dtype, 0)


registry.register(
    OpDef(
        name="Permute",
        category="Shape",
        help="Reorder per-sample dimensions, e.g. [1, 0] swaps [T, F] to [F, T].",
        params=(
            Param(
                "dims",
                "int_list",
                None,
                "New order of the per-sample dimensions.",
                required=True,
                min=0,
                max=63,
                min_items=1,
                max_items=8,
            ),
        ),
        arity=(1, 1),
        infer=_permute_infer,
        function=FunctionCall(
            fx=lambda g, args, p, ins, name: g.create_node(
                "call_method", "permute", (args[0], *_permutation(p, ins)), name=name
            ),
            source=lambda names, p, ins: f"{names[0]}.permute{_permutation(p, ins)!r}",
            apply=lambda xs, p, ins: xs[0].permute(*_permutation(p, ins)),
        ),
        input_dtypes=ANY_DTYPE,
        input_hint="any",
    )
)

# ---------------------------------------------------------------- Identity

registry.register(
    OpDef(
        name="Identity",
        category="Shape",
        help="Pass the input through unchanged (a named junction on the canvas).",
        params=(),
        arity=(1, 1),
        infer=lambda p, ins: Inferred(ins[0].shape, ins[0].dtype, 0),
        module=lambda p, ins: (nn.Identity, {}),
        input_dtypes=ANY_DTYPE,
        input_hint="any",
    )
)

# ---------------------------------------------------------------- Add, Mul


def _elementwise(name: str, fn: Callable[[Any, Any], Any], symbol: str, help: str) -> OpDef:
    def infer(p: P, ins: list[In]) -> Inferred:
        dtype = _equal_dtypes(name, ins)
        if len({i.shape for i in ins}) > 1:
            raise ShapeError(f"{name} needs equal shapes, got {describe_ins(ins)}")
        return Inferred(ins[0].shape, dtype, 0)

    def to_fx(g: fx.Graph, args: list[fx.Node], p: P, ins: list[In], name_: str) -> fx.Node:
        # Left to right, one binary op per extra input: the same order as the source's a + b + c.
        node = args[0]
        for i, arg in enumerate(args[1:], start=1):
            last = i == len(args) - 1
            node = g.create_node(
                "call_function", fn, (node, arg), name=name_ if last else f"{name_}_part{i}"
            )
        return node

    return OpDef(
        name=name,
        category="Merge",
        help=help,
        params=(),
        arity=(2, None),
        infer=infer,
        function=FunctionCall(
            fx=to_fx,
            source=lambda names, p, ins: f" {symbol} ".join(names),
            apply=lambda xs, p, ins: reduce(fn, xs),
        ),
        input_dtypes=ANY_DTYPE,
        input_hint="equal shapes",
    )


registry.register(
    _elementwise(
        "Add",
        operator.add,
        "+",
        "Element-wise sum of inputs of equal shape (residual connections).",
    )
)
registry.register(
    _elementwise(
        "Mul", operator.mul, "*", "Element-wise product of inputs of equal shape (gating)."
    )
)

# ---------------------------------------------------------------- Concat


def _concat_dim(p: P, ins: list[In]) -> int:
    dtype_ok = _equal_dtypes("Concat", ins)
    del dtype_ok
    ranks = {len(i.shape) for i in ins}
    if len(ranks) > 1:
        raise ShapeError(
            f"Concat needs inputs with the same number of dimensions, got {describe_ins(ins)}"
        )
    rank = ranks.pop()
    dim = sample_dim("Concat", p["dim"], rank)
    others = {tuple(d for k, d in enumerate(i.shape) if k != dim) for i in ins}
    if len(others) > 1:
        raise ShapeError(
            f"Concat along dim {p['dim']} needs all other dimensions equal, got {describe_ins(ins)}"
        )
    return dim


def _concat_infer(p: P, ins: list[In]) -> Inferred:
    dim = _concat_dim(p, ins)
    shape = list(ins[0].shape)
    shape[dim] = sum(i.shape[dim] for i in ins)
    return Inferred(tuple(shape), ins[0].dtype, 0)


registry.register(
    OpDef(
        name="Concat",
        category="Merge",
        help="Join inputs along a per-sample dimension, in the order of the node's inputs.",
        params=(
            Param(
                "dim",
                "int",
                0,
                "Per-sample dimension to join along (0: first, -1: last).",
                min=-64,
                max=63,
            ),
        ),
        arity=(2, None),
        infer=_concat_infer,
        function=FunctionCall(
            fx=lambda g, args, p, ins, name: g.create_node(
                "call_function",
                torch.cat,
                (list(args),),
                {"dim": batched_dim(_concat_dim(p, ins), len(ins[0].shape))},
                name=name,
            ),
            source=lambda names, p, ins: (
                f"torch.cat([{', '.join(names)}], dim={batched_dim(_concat_dim(p, ins), len(ins[0].shape))})"
            ),
            apply=lambda xs, p, ins: torch.cat(
                xs, dim=batched_dim(_concat_dim(p, ins), len(ins[0].shape))
            ),
        ),
        input_dtypes=ANY_DTYPE,
        input_hint="equal shapes except along dim",
    )
)
