"""Ops that move data around without weights: Flatten, Reshape, Permute, Transpose,
Squeeze, Unsqueeze, Split, Chunk, Pad, Identity (Shape), Mean, Sum, Max (Reduction) and
Add, Mul, Sub, MatMul, Concat (Merge)."""

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
from engine.ops.rules import as_written, batched_dim, describe_ins, int_param, per_dim, sample_dim

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
        keywords=("flat", "vectorize", "ravel"),
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
        torch_name="torch.reshape",
        keywords=("view", "resize dimensions"),
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
        torch_name="torch.permute",
        keywords=("reorder dimensions", "transpose", "channels last"),
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
        keywords=("pass through", "no-op", "junction"),
    )
)

# ---------------------------------------------------------------- Add, Mul


def _elementwise(
    name: str,
    fn: Callable[[Any, Any], Any],
    symbol: str,
    help: str,
    arity: tuple[int, int | None] = (2, None),
    keywords: tuple[str, ...] = (),
) -> OpDef:
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
        arity=arity,
        infer=infer,
        function=FunctionCall(
            fx=to_fx,
            source=lambda names, p, ins: f" {symbol} ".join(names),
            apply=lambda xs, p, ins: reduce(fn, xs),
        ),
        input_dtypes=ANY_DTYPE,
        input_hint="equal shapes",
        torch_name=f"torch.{fn.__name__}",
        keywords=keywords,
    )


registry.register(
    _elementwise(
        "Add",
        operator.add,
        "+",
        "Element-wise sum of inputs of equal shape (residual connections).",
        keywords=("plus", "sum", "residual", "skip connection"),
    )
)
registry.register(
    _elementwise(
        "Mul",
        operator.mul,
        "*",
        "Element-wise product of inputs of equal shape (gating).",
        keywords=("multiply", "product", "gate", "times"),
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
        torch_name="torch.cat",
        keywords=("concatenate", "join", "stack", "merge"),
    )
)

# ---------------------------------------------------------------- Sub, MatMul

registry.register(
    _elementwise(
        "Sub",
        operator.sub,
        "-",
        "Element-wise difference of two inputs of equal shape: first minus second.",
        arity=(2, 2),
        keywords=("subtract", "minus", "difference"),
    )
)


def _matmul_infer(p: P, ins: list[In]) -> Inferred:
    a, b = ins
    dtype = _equal_dtypes("MatMul", ins)
    if len(a.shape) < 2 or len(a.shape) != len(b.shape):
        raise ShapeError(
            f"MatMul needs two inputs with the same number of dimensions (at least 2: "
            f"[..., n, k] and [..., k, m]), got {describe_ins(ins)}"
        )
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(
            f"MatMul needs the last dimension of the first input to equal the second-to-last of "
            f"the second, got {describe_ins(ins)}"
        )
    try:
        lead = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except RuntimeError:
        raise ShapeError(
            f"MatMul cannot broadcast the leading dimensions of {describe_ins(ins)}"
        ) from None
    return Inferred((*lead, a.shape[-2], b.shape[-1]), dtype, 0)


registry.register(
    OpDef(
        name="MatMul",
        category="Merge",
        help="Matrix product of [..., n, k] and [..., k, m] per sample (torch.matmul, a @ b).",
        params=(),
        arity=(2, 2),
        infer=_matmul_infer,
        function=FunctionCall(
            fx=lambda g, args, p, ins, name: g.create_node(
                "call_function", torch.matmul, (args[0], args[1]), name=name
            ),
            source=lambda names, p, ins: f"{names[0]} @ {names[1]}",
            apply=lambda xs, p, ins: torch.matmul(xs[0], xs[1]),
        ),
        input_dtypes=ANY_DTYPE,
        input_hint="[..., n, k] and [..., k, m]",
        torch_name="torch.matmul",
        keywords=("matrix multiply", "product", "bmm", "dot", "attention scores"),
    )
)

# ---------------------------------------------------------------- Transpose, Squeeze, Unsqueeze


def _transpose_dims(p: P, ins: list[In]) -> tuple[int, int]:
    rank = len(ins[0].shape)
    d0 = sample_dim("Transpose", p["dim0"], rank, "dim0")
    d1 = sample_dim("Transpose", p["dim1"], rank, "dim1")
    return d0 + 1, d1 + 1


def _transpose_infer(p: P, ins: list[In]) -> Inferred:
    d0, d1 = _transpose_dims(p, ins)
    shape = list(ins[0].shape)
    shape[d0 - 1], shape[d1 - 1] = shape[d1 - 1], shape[d0 - 1]
    return Inferred(tuple(shape), ins[0].dtype, 0)


_DIM: dict[str, Any] = {"min": -64, "max": 63}

registry.register(
    OpDef(
        name="Transpose",
        category="Shape",
        help="Swap two per-sample dimensions, e.g. [T, F] to [F, T].",
        params=(
            Param("dim0", "int", 0, "First per-sample dimension to swap.", **_DIM),
            Param("dim1", "int", 1, "Second per-sample dimension to swap.", **_DIM),
        ),
        arity=(1, 1),
        infer=_transpose_infer,
        function=FunctionCall(
            fx=lambda g, args, p, ins, name: g.create_node(
                "call_method", "transpose", (args[0], *_transpose_dims(p, ins)), name=name
            ),
            source=lambda names, p, ins: "{}.transpose({}, {})".format(
                names[0], *_transpose_dims(p, ins)
            ),
            apply=lambda xs, p, ins: xs[0].transpose(*_transpose_dims(p, ins)),
        ),
        input_dtypes=ANY_DTYPE,
        input_hint="any",
        torch_name="torch.transpose",
        keywords=("swap axes", "swapaxes", "transpose"),
    )
)


def _sample_dims(name: str, value: Any, rank: int, field: str = "dim") -> tuple[int, ...]:
    """Normalised per-sample dimensions from an int, a list, or null (all of them)."""
    if value is None:
        return tuple(range(rank))
    dims = tuple(sample_dim(name, d, rank, field) for d in per_dim(value, 1))
    if len(set(dims)) != len(dims):
        raise ShapeError(
            f"{name} '{field}' names a dimension twice: {list(per_dim(value, 1))}", field
        )
    return dims


def _squeeze_dims(p: P, ins: list[In]) -> tuple[int, ...]:
    x = ins[0]
    dims = _sample_dims("Squeeze", p["dim"], len(x.shape))
    # PyTorch leaves a named dimension whose size is not 1 as it is.
    return tuple(d + 1 for d in dims if x.shape[d] == 1)


def _squeeze_infer(p: P, ins: list[In]) -> Inferred:
    drop = {d - 1 for d in _squeeze_dims(p, ins)}
    shape = tuple(s for i, s in enumerate(ins[0].shape) if i not in drop)
    return Inferred(shape, ins[0].dtype, 0)


registry.register(
    OpDef(
        name="Squeeze",
        category="Shape",
        help="Remove per-sample dimensions of size 1 (all of them, or the ones named in dim).",
        params=(
            Param(
                "dim",
                "int_or_tuple",
                None,
                "Per-sample dimension(s) to remove if their size is 1 (null: every size-1 one).",
                nullable=True,
                min_items=1,
                max_items=8,
                **_DIM,
            ),
        ),
        arity=(1, 1),
        infer=_squeeze_infer,
        function=FunctionCall(
            fx=lambda g, args, p, ins, name: g.create_node(
                "call_method", "squeeze", (args[0], _squeeze_dims(p, ins)), name=name
            ),
            source=lambda names, p, ins: f"{names[0]}.squeeze({_squeeze_dims(p, ins)!r})",
            apply=lambda xs, p, ins: xs[0].squeeze(_squeeze_dims(p, ins)),
        ),
        input_dtypes=ANY_DTYPE,
        input_hint="any",
        torch_name="torch.squeeze",
        keywords=("remove dimension", "drop axis", "size 1"),
    )
)


def _unsqueeze_dim(p: P, ins: list[In]) -> int:
    rank = len(ins[0].shape) + 1
    return sample_dim("Unsqueeze", p["dim"], rank) + 1


def _unsqueeze_infer(p: P, ins: list[In]) -> Inferred:
    shape = list(ins[0].shape)
    shape.insert(_unsqueeze_dim(p, ins) - 1, 1)
    return Inferred(tuple(shape), ins[0].dtype, 0)


registry.register(
    OpDef(
        name="Unsqueeze",
        category="Shape",
        help="Insert a per-sample dimension of size 1 at dim, e.g. [8, 8] to [1, 8, 8].",
        params=(Param("dim", "int", 0, "Where the new dimension goes (-1: last).", **_DIM),),
        arity=(1, 1),
        infer=_unsqueeze_infer,
        function=FunctionCall(
            fx=lambda g, args, p, ins, name: g.create_node(
                "call_method", "unsqueeze", (args[0], _unsqueeze_dim(p, ins)), name=name
            ),
            source=lambda names, p, ins: f"{names[0]}.unsqueeze({_unsqueeze_dim(p, ins)})",
            apply=lambda xs, p, ins: xs[0].unsqueeze(_unsqueeze_dim(p, ins)),
        ),
        input_dtypes=ANY_DTYPE,
        input_hint="any",
        torch_name="torch.unsqueeze",
        keywords=("add dimension", "expand dims", "new axis", "channel"),
    )
)

# ---------------------------------------------------------------- Mean, Sum, Max


def _reduction(
    name: str, fn: Callable[..., torch.Tensor], written: str, help: str, dtypes: tuple[str, ...]
) -> OpDef:
    def dims(p: P, ins: list[In]) -> tuple[int, ...]:
        return tuple(d + 1 for d in _sample_dims(name, p["dim"], len(ins[0].shape)))

    def infer(p: P, ins: list[In]) -> Inferred:
        reduced = {d - 1 for d in dims(p, ins)}
        shape = tuple(
            (1 if i in reduced else s)
            for i, s in enumerate(ins[0].shape)
            if p["keepdim"] or i not in reduced
        )
        return Inferred(shape, ins[0].dtype, 0)

    # An input with no per-sample dimensions (one value per sample) has nothing to reduce, so
    # the op is the identity there: torch reads dim=() as "every dimension", the batch too.
    def to_fx(g: fx.Graph, args: list[fx.Node], p: P, ins: list[In], node: str) -> fx.Node:
        if not dims(p, ins):
            return args[0]
        return g.create_node(
            "call_function",
            fn,
            (args[0],),
            {"dim": dims(p, ins), "keepdim": p["keepdim"]},
            name=node,
        )

    def source(names: list[str], p: P, ins: list[In]) -> str:
        if not dims(p, ins):
            return names[0]
        return f"{written}({names[0]}, dim={dims(p, ins)!r}, keepdim={p['keepdim']!r})"

    def apply(xs: list[torch.Tensor], p: P, ins: list[In]) -> torch.Tensor:
        if not dims(p, ins):
            return xs[0]
        return fn(xs[0], dim=dims(p, ins), keepdim=p["keepdim"])

    return OpDef(
        name=name,
        category="Reduction",
        help=help,
        params=(
            Param(
                "dim",
                "int_or_tuple",
                None,
                "Per-sample dimension(s) to reduce: one number or several (null: all of them; "
                "an input with none passes through unchanged).",
                nullable=True,
                min_items=1,
                max_items=8,
                **_DIM,
            ),
            Param("keepdim", "bool", False, "Keep each reduced dimension with size 1."),
        ),
        arity=(1, 1),
        infer=infer,
        function=FunctionCall(fx=to_fx, source=source, apply=apply),
        input_dtypes=dtypes,
        input_hint="any",
        torch_name=written,
        keywords=("reduce", "pool over", "aggregate", "global"),
    )


registry.register(
    _reduction(
        "Mean",
        torch.mean,
        "torch.mean",
        "Average over the chosen per-sample dimensions (e.g. over time, or over H and W).",
        ("float32",),
    )
)
registry.register(
    _reduction(
        "Sum", torch.sum, "torch.sum", "Sum over the chosen per-sample dimensions.", ANY_DTYPE
    )
)
registry.register(
    _reduction(
        "Max",
        torch.amax,
        "torch.amax",
        "Maximum over the chosen per-sample dimensions (the values, not the indices).",
        ANY_DTYPE,
    )
)

# ---------------------------------------------------------------- Split, Chunk (several outputs)

MAX_PORTS = 64


def _split_dim(name: str, p: P, ins: list[In]) -> int:
    return sample_dim(name, p["dim"], len(ins[0].shape))


def _split_infer(p: P, ins: list[In]) -> Inferred:
    x = ins[0]
    dim = _split_dim("Split", p, ins)
    size, how = x.shape[dim], p["split_size_or_sections"]
    if isinstance(how, list):
        if sum(how) != size:
            raise ShapeError(
                f"Split sections {how} add up to {sum(how)}, but dim {p['dim']} of {x} has {size}",
                field="split_size_or_sections",
            )
        parts = list(how)
    else:
        parts = [how] * (size // how) + ([size % how] if size % how else [])
    return _ports("Split", x, dim, parts, "split_size_or_sections")


def _chunk_infer(p: P, ins: list[In]) -> Inferred:
    x = ins[0]
    dim = _split_dim("Chunk", p, ins)
    size = x.shape[dim]
    step = -(-size // p["chunks"])  # torch.chunk: chunks of ceil(size / chunks); may give fewer
    parts = [step] * (size // step) + ([size % step] if size % step else [])
    return _ports("Chunk", x, dim, parts, "chunks")


def _ports(name: str, x: In, dim: int, parts: list[int], field: str) -> Inferred:
    if len(parts) > MAX_PORTS:
        raise ShapeError(f"{name} would give {len(parts)} outputs; the limit is {MAX_PORTS}", field)
    shapes = []
    for part in parts:
        shape = list(x.shape)
        shape[dim] = part
        shapes.append(tuple(shape))
    return Inferred(shapes[0], x.dtype, 0, tuple(shapes))


def _split_args(p: P, ins: list[In]) -> tuple[Any, int]:
    how = p["split_size_or_sections"]
    return as_written(how), batched_dim(_split_dim("Split", p, ins), len(ins[0].shape))


def _chunk_dim(p: P, ins: list[In]) -> int:
    return batched_dim(_split_dim("Chunk", p, ins), len(ins[0].shape))


registry.register(
    OpDef(
        name="Split",
        category="Shape",
        help="Cut the input along dim into pieces of a size (the last may be smaller) or of the "
        "listed sizes; each piece is its own output (node:0, node:1, ...).",
        params=(
            Param(
                "split_size_or_sections",
                "int_or_tuple",
                None,
                "Size of each piece, or a list of the sizes (they must add up to the dimension).",
                required=True,
                min=1,
                max=2**31 - 1,
                min_items=1,
                max_items=MAX_PORTS,
            ),
            Param("dim", "int", 0, "Per-sample dimension to cut along.", **_DIM),
        ),
        arity=(1, 1),
        infer=_split_infer,
        function=FunctionCall(
            fx=lambda g, args, p, ins, name: g.create_node(
                "call_function",
                torch.split,
                (args[0], _split_args(p, ins)[0]),
                {"dim": _split_args(p, ins)[1]},
                name=name,
            ),
            source=lambda names, p, ins: "torch.split({}, {!r}, dim={})".format(
                names[0], *_split_args(p, ins)
            ),
            apply=lambda xs, p, ins: torch.split(
                xs[0], _split_args(p, ins)[0], dim=_split_args(p, ins)[1]
            ),
        ),
        input_dtypes=ANY_DTYPE,
        input_hint="any",
        torch_name="torch.split",
        keywords=("slice", "divide", "branch", "several outputs", "unbind"),
        multi_output=True,
    )
)
registry.register(
    OpDef(
        name="Chunk",
        category="Shape",
        help="Cut the input along dim into this many nearly equal pieces (torch.chunk may give "
        "fewer); each piece is its own output (node:0, node:1, ...).",
        params=(
            int_param("chunks", 2, "How many pieces.", hi=MAX_PORTS),
            Param("dim", "int", 0, "Per-sample dimension to cut along.", **_DIM),
        ),
        arity=(1, 1),
        infer=_chunk_infer,
        function=FunctionCall(
            fx=lambda g, args, p, ins, name: g.create_node(
                "call_function",
                torch.chunk,
                (args[0], p["chunks"]),
                {"dim": _chunk_dim(p, ins)},
                name=name,
            ),
            source=lambda names, p, ins: (
                f"torch.chunk({names[0]}, {p['chunks']}, dim={_chunk_dim(p, ins)})"
            ),
            apply=lambda xs, p, ins: torch.chunk(xs[0], p["chunks"], dim=_chunk_dim(p, ins)),
        ),
        input_dtypes=ANY_DTYPE,
        input_hint="any",
        torch_name="torch.chunk",
        keywords=("split", "divide", "halves", "gate", "several outputs"),
        multi_output=True,
    )
)

# ---------------------------------------------------------------- Pad


def _pad_check(p: P, ins: list[In]) -> tuple[int, ...]:
    x, pad, mode = ins[0], p["pad"], p["mode"]
    if len(pad) % 2:
        raise ShapeError(
            f"Pad 'pad' needs pairs (left, right) per dimension from the last one, got {pad}",
            field="pad",
        )
    n = len(pad) // 2
    rank = len(x.shape)
    if rank < n:
        raise ShapeError(f"Pad 'pad' pads {n} dimensions but {x} has only {rank}", field="pad")
    if mode != "constant" and rank not in (n, n + 1):
        raise ShapeError(
            f"Pad '{mode}' with {n} pair(s) needs a {n}- or {n + 1}-dimensional input "
            f"(channels first), got {x}",
            field="pad",
        )
    shape = list(x.shape)
    for i in range(n):
        axis = rank - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        if mode == "reflect" and max(before, after) >= shape[axis]:
            raise ShapeError(
                f"Pad 'reflect' needs each padding smaller than the dimension it pads "
                f"({shape[axis]} in {x}), got {pad}",
                field="pad",
            )
        if mode == "circular" and max(before, after) > shape[axis]:
            raise ShapeError(
                f"Pad 'circular' needs each padding at most the dimension it pads "
                f"({shape[axis]} in {x}), got {pad}",
                field="pad",
            )
        shape[axis] += before + after
    return tuple(shape)


def _pad_kwargs(p: P) -> dict[str, Any]:
    if p["mode"] == "constant":
        return {"mode": "constant", "value": p["value"]}
    return {"mode": p["mode"]}


def _pad_source(names: list[str], p: P, ins: list[In]) -> str:
    kwargs = ", ".join(f"{k}={v!r}" for k, v in _pad_kwargs(p).items())
    return f"nn.functional.pad({names[0]}, {tuple(p['pad'])!r}, {kwargs})"


registry.register(
    OpDef(
        name="Pad",
        category="Shape",
        help="Pad the last dimensions: (left, right) for the last, then (top, bottom) for the one "
        "before, ...; with a constant, a reflection, the edge value, or wrapping around.",
        params=(
            Param(
                "pad",
                "int_list",
                None,
                "Padding sizes in pairs, last dimension first, e.g. [1, 1, 2, 2].",
                required=True,
                min=0,
                max=4096,
                min_items=2,
                max_items=6,
            ),
            Param(
                "mode",
                "choice",
                "constant",
                "constant: fill with value; reflect: mirror; replicate: repeat the edge; "
                "circular: wrap around.",
                choices=("constant", "reflect", "replicate", "circular"),
            ),
            Param("value", "float", 0.0, "Fill value for 'constant'.", min=None, max=None),
        ),
        arity=(1, 1),
        infer=lambda p, ins: Inferred(_pad_check(p, ins), ins[0].dtype, 0),
        function=FunctionCall(
            fx=lambda g, args, p, ins, name: g.create_node(
                "call_function",
                nn.functional.pad,
                (args[0], tuple(p["pad"])),
                _pad_kwargs(p),
                name=name,
            ),
            source=_pad_source,
            apply=lambda xs, p, ins: nn.functional.pad(xs[0], tuple(p["pad"]), **_pad_kwargs(p)),
        ),
        input_hint="any",
        torch_name="nn.functional.pad",
        keywords=("padding", "border", "zero pad", "reflection pad", "crop"),
    )
)
