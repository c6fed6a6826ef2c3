"""Functions and tensor methods read off a traced graph: function key -> (its functions, its rule).

`FUNCTION_RULES` is to `call_function` / `call_method` nodes what `MODULE_RULES` is to
`call_module` ones. A node's key is the name of the tensor method it calls (`x.relu()` is
"relu"), or the key whose `targets` hold the function it calls (`torch.relu`, `F.relu`); the
key's handler turns the node into the catalog op it is. Aliases (`x.contiguous()`) add no node:
the converter refers to their input instead.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch import fx

from engine.import_fx.layers import (
    Emit,
    Unsupported,
    bind_args,
    int_or_tuple,
    meta_dims,
    per_sample_dim,
)


class NodeReader(Protocol):
    """What a handler reads of the graph being converted (the converter)."""

    notes: list[str]

    def tensor(self, arg: Any) -> fx.Node: ...

    def meta_shape(self, arg: Any) -> tuple[int, ...]: ...

    def sample_shape(self, arg: Any) -> tuple[int, ...]: ...


FunctionHandler = Callable[[NodeReader, fx.Node], Emit]


@dataclass(frozen=True)
class FunctionRule:
    """One function key: its handler, and the torch / operator functions that call it."""

    handler: FunctionHandler
    targets: tuple[Any, ...] = ()


def callable_name(node: fx.Node) -> str:
    """What the user wrote, as the problems name it: `Tensor.view()`, `F.pad`, `the operator +`."""
    if node.op == "call_method":
        return f"Tensor.{node.target}()"
    target = node.target
    if target is getattr:
        return f"the tensor attribute .{node.args[1]}"
    if target in (
        operator.add,
        operator.iadd,
        operator.mul,
        operator.imul,
        operator.sub,
        operator.isub,
        operator.matmul,
        operator.truediv,
        operator.floordiv,
        operator.pow,
        operator.neg,
    ):
        symbol = {
            "add": "+",
            "iadd": "+=",
            "mul": "*",
            "imul": "*=",
            "sub": "-",
            "isub": "-=",
            "matmul": "@",
            "truediv": "/",
            "floordiv": "//",
            "pow": "**",
            "neg": "unary -",
        }
        return f"the operator {symbol[target.__name__]}"
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", str(target))
    if module.startswith("torch.nn.functional") or module == "torch.nn.functional":
        return f"F.{name}"
    if module.startswith("torch._C._fft") or module.startswith("torch.fft"):
        return f"torch.fft.{name.removeprefix('fft_')}"
    if module.startswith("torch"):
        return f"torch.{name}"
    return f"{module}.{name}" if module else name


def describe_index(index: Any) -> str:
    """An index as the user wrote it: `0`, `:, 1:3`, `..., None`."""

    def one(i: Any) -> str:
        if isinstance(i, slice):
            parts = ["" if v is None else str(v) for v in (i.start, i.stop)]
            return ":".join(parts) + (f":{i.step}" if i.step is not None else "")
        if i is None:
            return "None"
        if i is Ellipsis:
            return "..."
        return i.name if isinstance(i, fx.Node) else repr(i)

    return ", ".join(one(i) for i in index) if isinstance(index, tuple) else one(index)


# ------------------------------------------------------------------ handlers: (graph, node) -> Emit


def _bound(
    graph: NodeReader, node: fx.Node, names: list[str], defaults: dict[str, Any]
) -> tuple[fx.Node, dict[str, Any], tuple[int, ...]]:
    """The node's input tensor, its other arguments by name, and the input's sample shape."""
    b = bind_args(node.args, dict(node.kwargs), ["input", *names], defaults)
    x = graph.tensor(b.pop("input"))
    return x, b, graph.sample_shape(x)


def _binary(op: str) -> FunctionHandler:
    def handler(graph: NodeReader, node: fx.Node) -> Emit:
        if node.kwargs.get("alpha", 1) != 1:
            raise Unsupported(f"{callable_name(node)} with alpha has no catalog op")
        a, b = node.args[0], node.args[1]
        if not (isinstance(a, fx.Node) and isinstance(b, fx.Node)):
            const = b if isinstance(a, fx.Node) else a
            raise Unsupported(
                f"{callable_name(node)} with the constant {const!r} has no catalog op"
            )
        sa, sb = graph.sample_shape(graph.tensor(a)), graph.sample_shape(graph.tensor(b))
        if op != "MatMul" and sa != sb:
            raise Unsupported(
                f"{callable_name(node)} broadcasts {list(sa)} with {list(sb)}; the catalog's {op} "
                "needs equal shapes"
            )
        return Emit(op, {}, [a, b])

    return handler


def _cat(graph: NodeReader, node: fx.Node) -> Emit:
    b = bind_args(node.args, dict(node.kwargs), ["tensors", "dim"], {"dim": 0})
    tensors = [graph.tensor(t) for t in b["tensors"]]
    rank = len(graph.sample_shape(tensors[0]))
    if len(tensors) < 2:
        return Emit("Identity", {}, tensors)
    return Emit("Concat", {"dim": per_sample_dim(b["dim"], rank)}, tensors)


def _flatten(graph: NodeReader, node: fx.Node) -> Emit:
    x, b, shape = _bound(graph, node, ["start_dim", "end_dim"], {"start_dim": 0, "end_dim": -1})
    rank = len(shape)
    return Emit(
        "Flatten",
        {
            "start_dim": per_sample_dim(b["start_dim"], rank, "start_dim"),
            "end_dim": per_sample_dim(b["end_dim"], rank, "end_dim"),
        },
        [x],
    )


def _reshape(graph: NodeReader, node: fx.Node) -> Emit:
    x = graph.tensor(node.args[0])
    before, after = graph.meta_shape(x), meta_dims(node.meta["tensor_meta"])
    if not after or after[0] != before[0]:
        raise Unsupported(
            f"{callable_name(node)} to {list(after)} mixes the batch dimension into the sample"
        )
    return Emit("Reshape", {"shape": list(after[1:])}, [x])


def _permute(graph: NodeReader, node: fx.Node) -> Emit:
    x = graph.tensor(node.args[0])
    dims = node.args[1:]
    if len(dims) == 1 and isinstance(dims[0], tuple | list):
        dims = tuple(dims[0])
    if "dims" in node.kwargs:
        dims = tuple(node.kwargs["dims"])
    rank = len(graph.meta_shape(x))
    norm = [d % rank for d in dims]
    if not norm or norm[0] != 0:
        raise Unsupported(f"{callable_name(node)}{tuple(dims)} moves the batch dimension")
    return Emit("Permute", {"dims": [d - 1 for d in norm[1:]]}, [x])


def _transpose(graph: NodeReader, node: fx.Node) -> Emit:
    x, b, shape = _bound(graph, node, ["dim0", "dim1"], {})
    rank = len(shape)
    return Emit(
        "Transpose",
        {
            "dim0": per_sample_dim(b["dim0"], rank, "dim0"),
            "dim1": per_sample_dim(b["dim1"], rank, "dim1"),
        },
        [x],
    )


def _squeeze(graph: NodeReader, node: fx.Node) -> Emit:
    x, b, shape = _bound(graph, node, ["dim"], {"dim": None})
    dim = b["dim"]
    if dim is None:
        graph.notes.append(
            f"{node.name}: squeeze() without dim keeps the batch dimension in the spec"
        )
        return Emit("Squeeze", {"dim": None}, [x])
    dims = list(dim) if isinstance(dim, tuple | list) else [dim]
    out = [per_sample_dim(d, len(shape)) for d in dims]
    return Emit("Squeeze", {"dim": out[0] if len(out) == 1 else out}, [x])


def _unsqueeze(graph: NodeReader, node: fx.Node) -> Emit:
    x, b, shape = _bound(graph, node, ["dim"], {})
    return Emit("Unsqueeze", {"dim": per_sample_dim(b["dim"], len(shape) + 1)}, [x])


def _reduce(op: str) -> FunctionHandler:
    def handler(graph: NodeReader, node: fx.Node) -> Emit:
        x, b, shape = _bound(graph, node, ["dim", "keepdim"], {"dim": None, "keepdim": False})
        b.pop("dtype", None)
        dim = b["dim"]
        if dim is None:
            raise Unsupported(f"{callable_name(node)} without dim reduces across the batch")
        dims = list(dim) if isinstance(dim, tuple | list) else [dim]
        out = [per_sample_dim(d, len(shape)) for d in dims]
        return Emit(
            op, {"dim": out[0] if len(out) == 1 else out, "keepdim": bool(b["keepdim"])}, [x]
        )

    return handler


def _split(graph: NodeReader, node: fx.Node) -> Emit:
    x, b, shape = _bound(graph, node, ["split_size_or_sections", "dim"], {"dim": 0})
    how = b["split_size_or_sections"]
    how = list(how) if isinstance(how, tuple | list) else how
    return Emit(
        "Split",
        {"split_size_or_sections": how, "dim": per_sample_dim(b["dim"], len(shape))},
        [x],
    )


def _chunk(graph: NodeReader, node: fx.Node) -> Emit:
    x, b, shape = _bound(graph, node, ["chunks", "dim"], {"dim": 0})
    return Emit(
        "Chunk", {"chunks": b["chunks"], "dim": per_sample_dim(b["dim"], len(shape))}, [x]
    )


def _pad(graph: NodeReader, node: fx.Node) -> Emit:
    x, b, shape = _bound(graph, node, ["pad", "mode", "value"], {"mode": "constant", "value": None})
    pad = [int(p) for p in b["pad"]]
    if len(pad) // 2 > len(shape):
        raise Unsupported(f"F.pad {pad} pads the batch dimension")
    params: dict[str, Any] = {"pad": pad, "mode": b["mode"]}
    if b["mode"] == "constant":
        params["value"] = float(b["value"] or 0.0)
    return Emit("Pad", params, [x])


def _softmax(op: str) -> FunctionHandler:
    def handler(graph: NodeReader, node: fx.Node) -> Emit:
        x, b, shape = _bound(graph, node, ["dim", "dtype"], {"dim": None, "dtype": None})
        if b["dim"] is None or b["dtype"] is not None:
            raise Unsupported(f"{callable_name(node)} needs dim and no dtype")
        return Emit(op, {"dim": per_sample_dim(b["dim"], len(shape))}, [x])

    return handler


def _activation(
    op: str, names: list[str], defaults: dict[str, Any], mapping: dict[str, str]
) -> FunctionHandler:
    """The op of an element-wise function: `names` its arguments after the input, with their
    `defaults`, and `mapping` {argument: catalog parameter}."""

    def handler(graph: NodeReader, node: fx.Node) -> Emit:
        x, b, _ = _bound(graph, node, names, defaults)
        return Emit(op, {param: b[arg] for arg, param in mapping.items()}, [x])

    return handler


def _pool(op: str, names: list[str], defaults: dict[str, Any]) -> FunctionHandler:
    def handler(graph: NodeReader, node: fx.Node) -> Emit:
        x, b, _ = _bound(graph, node, names, defaults)
        if b.pop("ceil_mode", False) or b.pop("return_indices", False):
            raise Unsupported(f"{callable_name(node)} with ceil_mode or return_indices")
        if b.pop("divisor_override", None) is not None:
            raise Unsupported(f"{callable_name(node)} with divisor_override")
        params = {k: (int_or_tuple(v) if v is not None else None) for k, v in b.items()}
        if "count_include_pad" in params:
            params["count_include_pad"] = bool(b["count_include_pad"])
        return Emit(op, params, [x])

    return handler


def _max_pool(op: str) -> FunctionHandler:
    names = ["kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"]
    return _pool(op, names, {"stride": None, "padding": 0, "dilation": 1})


def _avg_pool(op: str) -> FunctionHandler:
    names = [
        "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"
    ]
    return _pool(op, names, {"stride": None, "padding": 0, "count_include_pad": True})


def _adaptive_pool(op: str) -> FunctionHandler:
    return _pool(op, ["output_size", "return_indices"], {})


def alias(graph: NodeReader, node: fx.Node) -> Emit:
    """The handler of an alias, never called: the converter refers to the alias's input."""
    raise AssertionError(node.target)


_DROPOUT = (["p", "training"], {"p": 0.5, "training": True}, {"p": "p"})

FUNCTION_RULES: dict[str, FunctionRule] = {
    "add": FunctionRule(_binary("Add"), (operator.add, operator.iadd, torch.add)),
    "mul": FunctionRule(_binary("Mul"), (operator.mul, operator.imul, torch.mul)),
    "sub": FunctionRule(_binary("Sub"), (operator.sub, operator.isub, torch.sub)),
    "matmul": FunctionRule(_binary("MatMul"), (operator.matmul, torch.matmul, torch.bmm)),
    "cat": FunctionRule(_cat, (torch.cat, torch.concat, torch.concatenate)),
    "flatten": FunctionRule(_flatten, (torch.flatten,)),
    "reshape": FunctionRule(_reshape, (torch.reshape,)),
    "view": FunctionRule(_reshape),
    "permute": FunctionRule(_permute, (torch.permute,)),
    "transpose": FunctionRule(_transpose, (torch.transpose, torch.swapaxes)),
    "squeeze": FunctionRule(_squeeze, (torch.squeeze,)),
    "unsqueeze": FunctionRule(_unsqueeze, (torch.unsqueeze,)),
    "mean": FunctionRule(_reduce("Mean"), (torch.mean,)),
    "sum": FunctionRule(_reduce("Sum"), (torch.sum,)),
    "amax": FunctionRule(_reduce("Max"), (torch.amax,)),
    "split": FunctionRule(_split, (torch.split,)),
    "chunk": FunctionRule(_chunk, (torch.chunk,)),
    "pad": FunctionRule(_pad, (F.pad,)),
    "relu": FunctionRule(_activation("ReLU", [], {}, {}), (torch.relu, F.relu)),
    "gelu": FunctionRule(
        _activation(
            "GELU", ["approximate"], {"approximate": "none"}, {"approximate": "approximate"}
        ),
        (F.gelu,),
    ),
    "silu": FunctionRule(_activation("SiLU", [], {}, {}), (F.silu,)),
    "sigmoid": FunctionRule(_activation("Sigmoid", [], {}, {}), (torch.sigmoid, F.sigmoid)),
    "tanh": FunctionRule(_activation("Tanh", [], {}, {}), (torch.tanh, F.tanh)),
    "leaky_relu": FunctionRule(
        _activation(
            "LeakyReLU",
            ["negative_slope"],
            {"negative_slope": 0.01},
            {"negative_slope": "negative_slope"},
        ),
        (F.leaky_relu,),
    ),
    "elu": FunctionRule(
        _activation("ELU", ["alpha"], {"alpha": 1.0}, {"alpha": "alpha"}), (F.elu,)
    ),
    "softmax": FunctionRule(_softmax("Softmax"), (torch.softmax, F.softmax)),
    "log_softmax": FunctionRule(_softmax("LogSoftmax"), (torch.log_softmax, F.log_softmax)),
    "mish": FunctionRule(_activation("Mish", [], {}, {}), (F.mish,)),
    "hardswish": FunctionRule(_activation("Hardswish", [], {}, {}), (F.hardswish,)),
    "softplus": FunctionRule(
        _activation(
            "Softplus",
            ["beta", "threshold"],
            {"beta": 1.0, "threshold": 20.0},
            {"beta": "beta", "threshold": "threshold"},
        ),
        (F.softplus,),
    ),
    "dropout": FunctionRule(_activation("Dropout", *_DROPOUT), (F.dropout, torch.dropout)),
    "dropout2d": FunctionRule(_activation("Dropout2d", *_DROPOUT), (F.dropout2d,)),
    "max_pool1d": FunctionRule(_max_pool("MaxPool1d"), (F.max_pool1d,)),
    "max_pool2d": FunctionRule(_max_pool("MaxPool2d"), (F.max_pool2d,)),
    "avg_pool1d": FunctionRule(_avg_pool("AvgPool1d"), (F.avg_pool1d,)),
    "avg_pool2d": FunctionRule(_avg_pool("AvgPool2d"), (F.avg_pool2d,)),
    "adaptive_avg_pool1d": FunctionRule(
        _adaptive_pool("AdaptiveAvgPool1d"), (F.adaptive_avg_pool1d,)
    ),
    "adaptive_avg_pool2d": FunctionRule(
        _adaptive_pool("AdaptiveAvgPool2d"), (F.adaptive_avg_pool2d,)
    ),
    "adaptive_max_pool2d": FunctionRule(
        _adaptive_pool("AdaptiveMaxPool2d"), (F.adaptive_max_pool2d,)
    ),
    "contiguous": FunctionRule(alias),
    "clone": FunctionRule(alias),
    "detach": FunctionRule(alias),
}
ALIASES = frozenset(key for key, rule in FUNCTION_RULES.items() if rule.handler is alias)
# Every function with its key, in the table's order (the first key that holds it wins).
_KEYED_TARGETS = tuple((f, key) for key, rule in FUNCTION_RULES.items() for f in rule.targets)


def function_key(node: fx.Node) -> str | None:
    """One name per function / method the importer knows (torch.relu, F.relu, x.relu -> relu)."""
    if node.op == "call_method":
        return str(node.target)
    target = node.target
    return next((key for f, key in _KEYED_TARGETS if target is f), None)


def function_rule(node: fx.Node) -> FunctionRule | None:
    """The rule of a call_function / call_method node; None when the catalog has no op for it."""
    key = function_key(node)
    return FUNCTION_RULES.get(key) if key else None
