"""The op registry: parameter models, shape rules and builders, registered once per op."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import fx, nn

Shape = tuple[int, ...]
# The parameter kinds the catalog uses (the browser picks a form control per kind):
#   int, float, bool, choice (one of `choices`), int_list (a list of ints, `min_items`..`max_items`),
#   int_or_tuple: PyTorch's "int or tuple" (`kernel_size=3` or `(3, 1)`): one int, or a list of
#     `dims` ints (any length in `min_items`..`max_items` when `dims` is null); list items may be
#     null ("keep that size") when `item_nullable`; the strings in `choices`, if any, are accepted
#     too (`padding="same"`); null when `nullable`.
ParamType = Literal["int", "float", "bool", "choice", "int_list", "int_or_tuple"]
PARAM_KINDS: tuple[str, ...] = ("int", "float", "bool", "choice", "int_list", "int_or_tuple")
DType = Literal["float32", "int64"]
ANY_DTYPE: tuple[str, ...] = ("float32", "int64")
TORCH_DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "int64": torch.int64}
DTYPE_BYTES: dict[str, int] = {"float32": 4, "int64": 8}
INT_MAX = 2**31 - 1


def fmt_shape(shape: Sequence[int] | None) -> str:
    """A per-sample shape the way the canvas shows it: [1, 8, 8]."""
    return "unknown" if shape is None else "[" + ", ".join(str(d) for d in shape) + "]"


class ShapeError(Exception):
    """The op cannot take these inputs; `field` names the parameter at fault, if any."""

    def __init__(self, message: str, field: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.code = code or ("bad_param" if field else "shape_mismatch")


class ParamError(ValueError):
    """One parameter value is not acceptable."""


@dataclass(frozen=True)
class In:
    """One incoming edge as a shape rule sees it: which node it comes from, shape, dtype."""

    source: str
    shape: Shape
    dtype: str = "float32"

    def __str__(self) -> str:
        return f"{fmt_shape(self.shape)} from {self.source}"


@dataclass(frozen=True)
class Inferred:
    """What a shape rule returns: per-sample output shape, dtype and parameter count."""

    shape: Shape
    dtype: str
    params: int
    # Ops with several outputs (Split, Chunk): one shape per output port; `shape` is port 0's.
    ports: tuple[Shape, ...] | None = None


@dataclass(frozen=True)
class Param:
    """One op parameter as the browser's form and the validator see it."""

    name: str
    type: ParamType
    default: Any = None
    help: str = ""
    required: bool = False
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    nullable: bool = False
    min_items: int | None = None
    max_items: int | None = None
    dims: int | None = None
    item_nullable: bool = False

    def to_json(self) -> dict[str, Any]:
        """The parameter's entry in the catalog JSON."""
        out: dict[str, Any] = {
            "name": self.name,
            "type": self.type,
            "default": list(self.default) if isinstance(self.default, tuple) else self.default,
            "required": self.required,
            "min": self.min,
            "max": self.max,
            "choices": list(self.choices) if self.choices else None,
            "nullable": self.nullable,
            "help": self.help,
        }
        if self.type in ("int_list", "int_or_tuple"):
            out["min_items"] = self.min_items
            out["max_items"] = self.max_items
        if self.type == "int_or_tuple":
            out["dims"] = self.dims
            out["item_nullable"] = self.item_nullable
        return out

    def _bounds(self, value: float, what: str = "") -> None:
        prefix = f"{what} " if what else ""
        if self.min is not None and value < self.min:
            raise ParamError(f"{prefix}must be at least {_num(self.min)}, got {_num(value)}")
        if self.max is not None and value > self.max:
            raise ParamError(f"{prefix}must be at most {_num(self.max)}, got {_num(value)}")

    def coerce(self, value: Any) -> Any:
        """Check one user value and return it normalised; raise ParamError saying why not."""
        if value is None:
            if self.nullable:
                return None
            raise ParamError("must not be null")
        if self.type == "int":
            if not _is_int(value):
                raise ParamError(f"must be an integer, got {_describe(value)}")
            self._bounds(value)
            return int(value)
        if self.type == "float":
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ParamError(f"must be a number, got {_describe(value)}")
            if not math.isfinite(value):
                raise ParamError("must be a finite number")
            self._bounds(value)
            return float(value)
        if self.type == "bool":
            if not isinstance(value, bool):
                raise ParamError(f"must be true or false, got {_describe(value)}")
            return value
        if self.type == "choice":
            assert self.choices is not None
            if not isinstance(value, str) or value not in self.choices:
                options = ", ".join(repr(c) for c in self.choices)
                raise ParamError(f"must be one of {options}, got {_describe(value)}")
            return value
        if self.type == "int_or_tuple":
            return self._coerce_int_or_tuple(value)
        # int_list
        if not isinstance(value, list | tuple):
            raise ParamError(f"must be a list of integers, got {_describe(value)}")
        if self.min_items is not None and len(value) < self.min_items:
            raise ParamError(f"needs at least {self.min_items} items, got {len(value)}")
        if self.max_items is not None and len(value) > self.max_items:
            raise ParamError(f"takes at most {self.max_items} items, got {len(value)}")
        for i, item in enumerate(value):
            if not _is_int(item):
                raise ParamError(f"item {i} must be an integer, got {_describe(item)}")
            self._bounds(item, f"item {i}")
        return [int(v) for v in value]

    def _coerce_int_or_tuple(self, value: Any) -> Any:
        if isinstance(value, str) and self.choices:
            if value in self.choices:
                return value
            options = ", ".join(repr(c) for c in self.choices)
            raise ParamError(
                f"must be an integer, a list of integers or one of {options}, got {_describe(value)}"
            )
        if _is_int(value):
            self._bounds(value)
            return int(value)
        if not isinstance(value, list | tuple):
            words = "an integer or a list of integers"
            if self.choices:
                words += " or one of " + ", ".join(repr(c) for c in self.choices)
            raise ParamError(f"must be {words}, got {_describe(value)}")
        if self.dims is not None and len(value) != self.dims:
            raise ParamError(
                f"needs one integer or a list of {self.dims} (one per dimension), "
                f"got a list of {len(value)}"
            )
        if self.min_items is not None and len(value) < self.min_items:
            raise ParamError(f"needs at least {self.min_items} items, got {len(value)}")
        if self.max_items is not None and len(value) > self.max_items:
            raise ParamError(f"takes at most {self.max_items} items, got {len(value)}")
        items: list[int | None] = []
        for i, item in enumerate(value):
            if item is None and self.item_nullable:
                items.append(None)
                continue
            if not _is_int(item):
                keep = " or null" if self.item_nullable else ""
                raise ParamError(f"item {i} must be an integer{keep}, got {_describe(item)}")
            self._bounds(item, f"item {i}")
            items.append(int(item))
        return items


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value[:40])
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return repr(value)


ShapeRule = Callable[[Mapping[str, Any], list[In]], Inferred]
ModuleRule = Callable[[Mapping[str, Any], list[In]], tuple[type[nn.Module], dict[str, Any]]]


@dataclass(frozen=True)
class FunctionCall:
    """A parameter-free op expressed three ways that must agree: fx node, source, eager call."""

    fx: Callable[[fx.Graph, list[fx.Node], Mapping[str, Any], list[In], str], fx.Node]
    source: Callable[[list[str], Mapping[str, Any], list[In]], str]
    # One tensor, or a tuple of them for an op with several outputs (Split, Chunk).
    apply: Callable[
        [list[torch.Tensor], Mapping[str, Any], list[In]], torch.Tensor | tuple[torch.Tensor, ...]
    ]


@dataclass(frozen=True)
class OpDef:
    """Everything the engine knows about one op; the catalog JSON is generated from it."""

    name: str
    category: str
    help: str
    params: tuple[Param, ...]
    arity: tuple[int, int | None]
    infer: ShapeRule | None = None
    module: ModuleRule | None = None
    function: FunctionCall | None = None
    input_dtypes: tuple[str, ...] = ("float32",)
    inferred: tuple[str, ...] = ()
    input_hint: str = ""
    torch_name: str = ""
    keywords: tuple[str, ...] = ()
    multi_output: bool = False
    _by_name: dict[str, Param] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if (self.module is None) == (self.function is None):
            raise ValueError(f"{self.name}: give exactly one of module= or function=")
        self._by_name.update({p.name: p for p in self.params})

    def param(self, name: str) -> Param | None:
        """The parameter called `name`, if the op has one."""
        return self._by_name.get(name)

    def resolve_params(
        self, raw: Mapping[str, Any]
    ) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
        """Fill defaults and check each value; returns (params, [(code, field, message)])."""
        problems: list[tuple[str, str, str]] = []
        resolved: dict[str, Any] = {}
        for key in raw:
            if key not in self._by_name:
                known = ", ".join(p.name for p in self.params) or "none"
                problems.append(
                    (
                        "bad_param",
                        str(key),
                        f"{self.name} has no parameter '{key}' (known: {known})",
                    )
                )
        for p in self.params:
            if p.name not in raw:
                if p.required:
                    problems.append(("missing_param", p.name, f"{self.name} needs '{p.name}'"))
                else:
                    resolved[p.name] = (
                        list(p.default) if isinstance(p.default, tuple) else p.default
                    )
                continue
            try:
                resolved[p.name] = p.coerce(raw[p.name])
            except ParamError as exc:
                problems.append(("bad_param", p.name, f"{self.name} '{p.name}' {exc}"))
        return resolved, problems

    def run_infer(self, params: Mapping[str, Any], ins: list[In]) -> Inferred:
        """Apply the shape rule (analytic if the op has one, else on the meta device)."""
        if self.infer is not None:
            return self.infer(params, ins)
        return meta_infer(self, params, ins)

    def module_call(
        self, params: Mapping[str, Any], ins: list[In]
    ) -> tuple[type[nn.Module], dict[str, Any]]:
        """The module class and constructor keywords (shared by build and codegen)."""
        assert self.module is not None, f"{self.name} is a function op"
        return self.module(params, ins)

    def make_module(self, params: Mapping[str, Any], ins: list[In]) -> nn.Module:
        """Construct the op's module on the current default device."""
        cls, kwargs = self.module_call(params, ins)
        return cls(**kwargs)

    def to_json(self) -> dict[str, Any]:
        """The op's entry in the catalog JSON."""
        return {
            "name": self.name,
            "category": self.category,
            "help": self.help,
            "arity": {"min": self.arity[0], "max": self.arity[1]},
            "input_dtypes": list(self.input_dtypes),
            "input": self.input_hint,
            "inferred": list(self.inferred),
            "kind": "module" if self.module is not None else "function",
            "torch_name": self.torch_name or self._default_torch_name(),
            "keywords": list(self.keywords),
            "multi_output": self.multi_output,
            "params": [p.to_json() for p in self.params],
        }

    def _default_torch_name(self) -> str:
        if self.module is not None and getattr(nn, self.name, None) is not None:
            return f"nn.{self.name}"
        return ""


def meta_infer(op: OpDef, params: Mapping[str, Any], ins: list[In]) -> Inferred:
    """Shape rule by running the op on the `meta` device: nothing is allocated."""
    # A batch of 2 keeps batch-statistics layers (BatchNorm in training mode) happy.
    tensors = [torch.empty((2, *i.shape), dtype=TORCH_DTYPES[i.dtype], device="meta") for i in ins]
    with torch.no_grad():
        if op.function is not None:
            out = op.function.apply(tensors, params, ins)
            count = 0
        else:
            with torch.device("meta"):
                module = op.make_module(params, ins)
            out = module(*tensors)
            count = sum(p.numel() for p in module.parameters())
    names = {v: k for k, v in TORCH_DTYPES.items()}
    if isinstance(out, tuple | list):
        ports = tuple(tuple(o.shape[1:]) for o in out)
        dtype = names.get(out[0].dtype, str(out[0].dtype))
        return Inferred(ports[0], dtype, count, ports)
    dtype = names.get(out.dtype, str(out.dtype))
    return Inferred(tuple(out.shape[1:]), dtype, count)


class Registry:
    """Ops by name; the single source of the catalog."""

    def __init__(self) -> None:
        self._ops: dict[str, OpDef] = {}

    def register(self, op: OpDef) -> OpDef:
        """Add an op; each name may be registered once."""
        if op.name in self._ops:
            raise ValueError(f"op {op.name} is already registered")
        self._ops[op.name] = op
        return op

    def get(self, name: str) -> OpDef | None:
        """The op called `name`, or None."""
        return self._ops.get(name)

    def __getitem__(self, name: str) -> OpDef:
        return self._ops[name]

    def __contains__(self, name: object) -> bool:
        return name in self._ops

    def __iter__(self) -> Iterator[OpDef]:
        return iter(self._ops.values())

    def __len__(self) -> int:
        return len(self._ops)

    def names(self) -> list[str]:
        """All op names in registration order."""
        return list(self._ops)


registry = Registry()
