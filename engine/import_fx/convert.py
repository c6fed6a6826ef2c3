"""An existing `nn.Module` -> a graph spec of catalog ops plus the weights named as build() names them.

    module = load_module_class("model.py:Net")(**init_args)
    result = import_module(module, [InputShape((1, 28, 28))])
    result.problems        # one line per submodule / function the catalog lacks, with its source line
    result.spec            # version-1 spec dict (node ids = torch.fx node names)
    result.state_dict      # {"conv1.weight": ...}: load into engine.build(result.spec)

Tracing is `torch.fx` with a tracer that keeps catalog modules (and PyTorch's own layers) as
`call_module` leaves and traces through the user's own modules (nested blocks, nn.Sequential).
Shapes come from `torch.fx.passes.shape_prop` on a zero input (batch 2). Nothing is dropped:
every node either becomes a spec node, is an alias of one (`contiguous`), is shape arithmetic
(`x.size(0)` feeding a `view`), or is reported. What each node becomes is looked up in a
table: `MODULE_RULES` (engine.import_fx.layers) for modules, `FUNCTION_RULES`
(engine.import_fx.functions) for functions and tensor methods.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import io
import math
import operator
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import fx, nn
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata

from engine.import_fx.functions import (
    ALIASES,
    callable_name,
    describe_index,
    function_key,
    function_rule,
)
from engine.import_fx.layers import (
    MODULE_RULES,
    TUPLE_MODULES,
    Emit,
    Unsupported,
    encoder_layer_rule,
    layernorm_rule,
    meta_dims,
    torch_name,
)
from engine.ops import registry
from engine.spec import ID_PATTERN

PROP_BATCH = 2  # shape propagation batch (a batch of 1 would hide reshapes across the batch)
CHECK_BATCH = 3  # the output check's batch: unlike PROP_BATCH, catches a hard-coded batch size


class ModelImportError(Exception):
    """The model cannot be loaded or traced at all (bad path, class, arguments, weights)."""


@dataclass(frozen=True)
class InputShape:
    """One model input: per-sample shape (batch excluded) and dtype ("float32" or "int64")."""

    shape: tuple[int, ...]
    dtype: str = "float32"


@dataclass
class ImportResult:
    """What the import produced: the spec, its weights, and every problem (empty when it worked)."""

    spec: dict[str, Any]
    state_dict: dict[str, torch.Tensor]
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The inputs as traced: a float32 input that feeds an embedding becomes int64 (token ids).
    inputs: list[InputShape] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


# ------------------------------------------------------------------ loading the user's file


def load_module_class(target: str) -> type[nn.Module]:
    """`path/to/model.py:ClassName` -> the class (the file is imported: its code runs here)."""
    path_text, sep, name = target.rpartition(":")
    if not sep or not path_text or not name:
        raise ModelImportError(f"expected path/to/model.py:ClassName, got {target!r}")
    path = Path(path_text).resolve()
    if not path.is_file():
        raise ModelImportError(f"no such file: {path_text}")
    module_name = "_netloom_import_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ModelImportError(f"cannot import {path_text} as a Python module")
    mod = importlib.util.module_from_spec(spec)
    # The file may import its neighbours (from layers import Block) as it would when run.
    sys.path.insert(0, str(path.parent))
    sys.modules[module_name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as exc:
        raise ModelImportError(
            f"{path_text} failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        sys.path.remove(str(path.parent))
    cls = getattr(mod, name, None)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        found = sorted(
            k
            for k, v in vars(mod).items()
            if isinstance(v, type) and issubclass(v, nn.Module) and v.__module__ == module_name
        )
        hint = f" (nn.Module classes there: {', '.join(found)})" if found else ""
        raise ModelImportError(f"{path_text} has no nn.Module class {name!r}{hint}")
    return cls


def instantiate(cls: type[nn.Module], init_args: Any = None) -> nn.Module:
    """cls(**init_args) for a JSON object, cls(*init_args) for a JSON list, cls() for None."""
    try:
        if init_args is None:
            return cls()
        if isinstance(init_args, dict):
            return cls(**init_args)
        if isinstance(init_args, list):
            return cls(*init_args)
    except Exception as exc:
        raise ModelImportError(f"{cls.__name__}(...) failed: {type(exc).__name__}: {exc}") from exc
    raise ModelImportError("--init-args must be a JSON object (keywords) or a list (positional)")


def load_weights(module: nn.Module, path: str | Path) -> None:
    """Load a safetensors state dict into the module (strict: every name and shape must match)."""
    from safetensors.torch import load_file

    try:
        state = load_file(str(path), device="cpu")
    except Exception as exc:
        raise ModelImportError(f"cannot read weights {path}: {exc}") from exc
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()
        raise ModelImportError(
            f"weights {path} do not fit the model: {' '.join(first)[:600]}"
        ) from exc


# ------------------------------------------------------------------ tracing


def _catalog_leaf_types() -> tuple[type[nn.Module], ...]:
    return tuple(MODULE_RULES) + (nn.TransformerEncoder,)


class CatalogTracer(fx.Tracer):
    """Keeps catalog modules and PyTorch's own layers as call_module; traces through the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.record_stack_traces = True

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        if isinstance(m, nn.Sequential | nn.ModuleList | nn.ModuleDict):
            return False
        if type(m) in _catalog_leaf_types():
            return True
        return super().is_leaf_module(m, module_qualified_name)


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def _located(where: tuple[str, str] | None, what: str) -> str:
    """'model.py:14: <what> (at `x = self.act(x)`)', or just <what> when the line is unknown."""
    if where is None:
        return what
    return f"{where[0]}: {what} (at `{where[1]}`)" if where[1] else f"{where[0]}: {what}"


def _location(stack: str | None, user_file: str | None) -> tuple[str, str] | None:
    """('model.py:14', 'x = self.act(x)') from an fx stack trace: the frame in the user's file."""
    if not stack:
        return None
    frames = _FRAME.findall(stack)
    mine = [f for f in frames if user_file and Path(f[0]).resolve() == Path(user_file).resolve()]
    if not mine:
        mine = [f for f in frames if "site-packages" not in f[0] and "/torch/" not in f[0]]
    if not mine:
        return None
    file, line, _func, code = mine[-1]
    return f"{Path(file).name}:{line}", code.strip()


def _exception_location(exc: BaseException, user_file: str | None) -> tuple[str, str] | None:
    frames = inspect.getinnerframes(exc.__traceback__) if exc.__traceback__ else []
    for fr in reversed(frames):
        path = fr.filename
        if (user_file and Path(path).resolve() == Path(user_file).resolve()) or (
            not user_file and "site-packages" not in path and "/torch/" not in path
        ):
            code = (fr.code_context or [""])[0].strip()
            return f"{Path(path).name}:{fr.lineno}", code
    return None


def _module_file(module: nn.Module) -> str | None:
    try:
        return inspect.getsourcefile(type(module))
    except TypeError:
        return None


# ------------------------------------------------------------------ nodes -> spec nodes


class _Converter:
    def __init__(self, root: nn.Module, gm: fx.GraphModule, user_file: str | None) -> None:
        self.root = root
        self.gm = gm
        self.user_file = user_file
        self.nodes: list[dict[str, Any]] = []
        self.refs: dict[fx.Node, str] = {}  # fx node -> spec reference
        self.multi: dict[fx.Node, int] = {}  # Split/Chunk fx node -> number of ports
        self.tuple_modules: set[fx.Node] = set()  # LSTM/GRU/MHA nodes: only output 0 is read
        self.state: dict[str, torch.Tensor] = {}
        self.problems: list[str] = []
        # Reported nodes, and nodes fed by one (those are reported only for their own problems).
        self.failed: set[fx.Node] = set()
        self.notes: list[str] = []
        self.ids: set[str] = set()
        self.module_calls: dict[str, list[fx.Node]] = {}
        self._id_re = re.compile(ID_PATTERN)

    # -- reporting

    def report(self, node: fx.Node, what: str) -> None:
        where = _location(node.stack_trace, self.user_file)
        stack = node.meta.get("nn_module_stack") or {}
        inside = ""
        if stack and node.op != "call_module":
            path, cls = list(stack.values())[-1]
            cls_name = cls.__name__ if isinstance(cls, type) else str(cls).rsplit(".", 1)[-1]
            inside = f" (inside {path}: {cls_name})"
        line = _located(where, what + inside)
        if line not in self.problems:
            self.problems.append(line)

    # -- spec building

    def new_id(self, name: str) -> str:
        base = re.sub(r"\W", "_", name)[:60] or "node"
        if not base[0].isalpha() and base[0] != "_":
            base = "n_" + base
        ident, k = base, 1
        while ident in self.ids:
            ident, k = f"{base[:56]}_{k}", k + 1
        assert self._id_re.match(ident), ident
        self.ids.add(ident)
        return ident

    def add(self, node: fx.Node, emit: Emit, name: str | None = None) -> str:
        ident = self.new_id(name or node.name)
        entry: dict[str, Any] = {"id": ident, "op": emit.op}
        if emit.params:
            entry["params"] = emit.params
        entry["inputs"] = [self.ref(node, arg) for arg in emit.inputs]
        self.nodes.append(entry)
        if emit.module is not None:
            for key, tensor in emit.module.state_dict().items():
                self.state[f"{ident}.{key}"] = tensor.detach().clone()
        return ident

    def ref(self, node: fx.Node, arg: Any) -> str:
        if isinstance(arg, str):  # already a reference (expanded modules)
            return arg
        if not isinstance(arg, fx.Node) or arg not in self.refs:
            raise Unsupported(f"an input that is not a tensor of the graph: {arg!r}")
        return self.refs[arg]

    def meta_shape(self, arg: Any) -> tuple[int, ...]:
        if not isinstance(arg, fx.Node) or "tensor_meta" not in arg.meta:
            raise Unsupported(f"{arg!r} is not a tensor")
        meta = arg.meta["tensor_meta"]
        if not isinstance(meta, TensorMetadata):
            raise Unsupported(f"{arg.name} is a tuple of tensors; read one of them")
        return meta_dims(meta)

    def sample_shape(self, arg: Any) -> tuple[int, ...]:
        return self.meta_shape(arg)[1:]

    def tensor(self, arg: Any) -> fx.Node:
        if not isinstance(arg, fx.Node) or arg not in self.refs:
            kind = "a constant" if not isinstance(arg, fx.Node) else f"'{arg.name}'"
            raise Unsupported(f"uses {kind} where the catalog op needs a tensor of the graph")
        return arg

    # -- the walk

    def run(self, inputs: Sequence[InputShape]) -> dict[str, Any]:
        spec_inputs: list[dict[str, Any]] = []
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for node, inp in zip(placeholders, inputs, strict=True):
            ident = self.new_id(node.name)
            self.refs[node] = ident
            spec_inputs.append({"id": ident, "shape": list(inp.shape), "dtype": inp.dtype})
        outputs: list[str] = []
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                outputs = self.outputs(node)
                continue
            if any(n in self.failed for n in node.all_input_nodes):
                # Fed by a reported node: report it only if it is unsupported on its own.
                self.failed.add(node)
                own = self.intrinsic_problem(node)
                if own:
                    self.report(node, own)
                continue
            try:
                self.convert(node)
            except Unsupported as exc:
                self.failed.add(node)
                self.report(node, str(exc))
        for target, calls in self.module_calls.items():
            sub = self.root.get_submodule(target)
            if len(calls) > 1 and any(True for _ in sub.parameters()):
                self.report(
                    calls[1],
                    f"{target} ({torch_name(sub)}) is called {len(calls)} times: a spec node has "
                    "its own weights, so shared weights cannot be expressed",
                )
        return {"version": 1, "inputs": spec_inputs, "nodes": self.nodes, "outputs": outputs}

    def outputs(self, node: fx.Node) -> list[str]:
        value = node.args[0]
        items = list(value) if isinstance(value, tuple | list) else [value]
        refs = []
        for item in items:
            if isinstance(item, fx.Node) and item in self.refs:
                refs.append(self.refs[item])
            elif isinstance(item, dict):
                self.report(node, "the model returns a dict; return a tensor or a tuple of tensors")
            elif isinstance(item, fx.Node):
                pass  # its own problem is already reported
            else:
                self.report(node, f"the model returns a constant {item!r}")
        return refs

    def intrinsic_problem(self, node: fx.Node) -> str | None:
        """Why the node is unsupported whatever its inputs (no rule for it at all), if it is."""
        if node.op == "get_attr":
            return (
                f"self.{node.target} (a parameter or buffer used directly in forward) has no "
                "catalog op; make it part of a layer the catalog has"
            )
        if node.op == "call_module":
            sub = self.root.get_submodule(str(node.target))
            if type(sub) not in MODULE_RULES and not isinstance(sub, nn.TransformerEncoder):
                return f"{node.target} ({torch_name(sub)}) is not in the catalog"
        elif node.op in ("call_function", "call_method"):
            if "tensor_meta" not in node.meta:
                return None
            if node.target is operator.getitem:
                src, index = node.args
                src_meta = src.meta.get("tensor_meta") if isinstance(src, fx.Node) else None
                if isinstance(src_meta, TensorMetadata):  # x[...] on one tensor, not a tuple
                    return f"indexing or slicing a tensor ({self.refs.get(src, src.name)}[{describe_index(index)}]) has no catalog op"
                return None
            if function_rule(node) is None:
                return f"{callable_name(node)} has no catalog op"
        return None

    def convert(self, node: fx.Node) -> None:
        own = self.intrinsic_problem(node)
        if own:
            raise Unsupported(own)
        if "tensor_meta" not in node.meta:
            # Shape arithmetic (x.size(0), x.shape[1] * 2): only ever used as a constant.
            return
        if node.op == "call_module":
            self.convert_module(node)
        elif node.op in ("call_function", "call_method"):
            self.convert_function(node)

    def convert_module(self, node: fx.Node) -> None:
        target = str(node.target)
        sub = self.root.get_submodule(target)
        self.module_calls.setdefault(target, []).append(node)
        if isinstance(sub, nn.TransformerEncoder):
            self.expand_encoder(node, sub)
            return
        rule = MODULE_RULES[type(sub)]
        if isinstance(sub, nn.MultiheadAttention):
            q, k, v = (list(node.args) + [None] * 3)[:3]
            if not (q is k is v) or any(key != "need_weights" for key in node.kwargs):
                raise Unsupported(
                    f"{target} (nn.MultiheadAttention) is called with other than "
                    "self-attention (query = key = value, no mask)"
                )
        elif node.kwargs or len(node.args) != 1:
            extra = ", ".join(node.kwargs) or f"{len(node.args)} arguments"
            raise Unsupported(
                f"{target} ({torch_name(sub)}) is called with {extra}; the catalog op takes one input"
            )
        x = self.tensor(node.args[0])
        try:
            op, params = rule(sub, self.sample_shape(x))
        except Unsupported as exc:
            raise Unsupported(f"{target} ({torch_name(sub)}): {exc}") from None
        ident = self.add(node, Emit(op, params, [x], sub))
        self.refs[node] = ident
        if isinstance(sub, nn.Embedding) and sub.padding_idx is not None:
            self.notes.append(
                f"{target}: padding_idx={sub.padding_idx} is not kept (the forward is the same; "
                "training will also update that row)"
            )
        if isinstance(sub, TUPLE_MODULES):
            self.tuple_modules.add(node)

    def expand_encoder(self, node: fx.Node, enc: nn.TransformerEncoder) -> None:
        if node.kwargs or len(node.args) != 1:
            raise Unsupported(f"{node.target} (nn.TransformerEncoder) is called with a mask")
        x = self.tensor(node.args[0])
        shape = self.sample_shape(x)
        current: Any = x
        for i, layer in enumerate(enc.layers):
            try:
                op, params = encoder_layer_rule(layer, shape)
            except Unsupported as exc:
                raise Unsupported(
                    f"{node.target}.layers.{i} (nn.TransformerEncoderLayer): {exc}"
                ) from None
            current = self.add(node, Emit(op, params, [current], layer), f"{node.name}_layers_{i}")
        if enc.norm is not None:
            if not isinstance(enc.norm, nn.LayerNorm):
                raise Unsupported(
                    f"{node.target}.norm ({torch_name(enc.norm)}) is not in the catalog"
                )
            op, params = layernorm_rule(enc.norm, shape)
            current = self.add(node, Emit(op, params, [current], enc.norm), f"{node.name}_norm")
        self.refs[node] = current

    def convert_function(self, node: fx.Node) -> None:
        if node.target is operator.getitem:
            self.convert_getitem(node)
            return
        if function_key(node) in ALIASES:
            self.refs[node] = self.ref(node, self.tensor(node.args[0]))
            return
        rule = function_rule(node)
        assert rule is not None
        emit = rule.handler(self, node)
        ident = self.add(node, emit)
        self.refs[node] = ident
        if registry[emit.op].multi_output:
            self.multi[node] = len(node.meta["tensor_meta"])

    def convert_getitem(self, node: fx.Node) -> None:
        src, index = node.args
        if isinstance(src, fx.Node) and src in self.multi and isinstance(index, int):
            ports = self.multi[src]
            k = index % ports
            self.refs[node] = f"{self.refs[src]}:{k}"
            return
        if isinstance(src, fx.Node) and src in self.tuple_modules:
            if index == 0:
                self.refs[node] = self.refs[src]
                return
            raise Unsupported(
                f"reads output {index!r} of {src.target}; the catalog op gives only the output sequence"
            )
        raise Unsupported(
            f"indexing or slicing a tensor ({src}[{describe_index(index)}]) has no catalog op"
        )


# ------------------------------------------------------------------ the whole import


class _ShapeProp(ShapeProp):
    """ShapeProp that remembers the node it is running (to name the line of a failure)."""

    current: fx.Node | None = None

    def run_node(self, n: fx.Node) -> Any:
        self.current = n
        return super().run_node(n)


def _feeds_embedding(gm: fx.GraphModule, placeholder: fx.Node) -> str | None:
    """The target of the nn.Embedding (or F.embedding) that reads `placeholder` as indices, if any."""
    for user in placeholder.users:
        if user.op == "call_module" and isinstance(gm.get_submodule(str(user.target)), nn.Embedding):
            return str(user.target)
        if (
            user.op == "call_function"
            and user.target is torch.nn.functional.embedding
            and user.args[:1] == (placeholder,)
        ):
            return "F.embedding"
    return None


def _integer_inputs(
    gm: fx.GraphModule, inputs: Sequence[InputShape]
) -> tuple[list[InputShape], list[str]]:
    """The inputs with every float32 one that feeds an embedding as int64 token ids, and a note each.

    An embedding takes indices: tracing it with a float input fails with a dtype error that does
    not say which flag to give.
    """
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    resolved, notes = [], []
    for node, given in zip(placeholders, inputs, strict=True):
        embedding = _feeds_embedding(gm, node) if given.dtype == "float32" else None
        if embedding is None:
            resolved.append(given)
            continue
        resolved.append(InputShape(given.shape, "int64"))
        notes.append(
            f"input {node.name} feeds {embedding} (an embedding): traced as int64 token ids "
            "(as --input-dtype int64)"
        )
    return resolved, notes


_INDEX_DTYPE_HINT = (
    "; if the model takes token ids or other integer indices, add `--input-dtype int64`"
)


def _dtype_hint(message: str, inputs: Sequence[InputShape]) -> str:
    """The hint to add to a failure that reads as a float given where indices were expected."""
    floats = any(i.dtype == "float32" for i in inputs)
    wants_index = re.search(r"\b(Long|Int|indices|index)\b", message) is not None
    return _INDEX_DTYPE_HINT if floats and wants_index else ""


def _zeros(inputs: Sequence[InputShape], batch: int) -> list[torch.Tensor]:
    dtypes = {"float32": torch.float32, "int64": torch.int64}
    return [torch.zeros((batch, *i.shape), dtype=dtypes[i.dtype]) for i in inputs]


def import_module(module: nn.Module, inputs: Sequence[InputShape]) -> ImportResult:
    """Trace `module` (in eval mode) and convert it; problems are listed, never dropped.

    Raises:
        ModelImportError: the module cannot be traced or run on the given input shapes.
    """
    module.eval()
    user_file = _module_file(module)
    tracer = CatalogTracer()
    try:
        graph = tracer.trace(module)
    except Exception as exc:
        where = _exception_location(exc, user_file)
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelImportError(
            _located(where, f"torch.fx cannot trace {type(module).__name__}: {message}")
        ) from exc
    gm = fx.GraphModule(tracer.root, graph, type(module).__name__)
    gm.graph.eliminate_dead_code()  # `out, _ = self.lstm(x)`: the unread `_` is no problem
    gm.recompile()
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(inputs):
        names = ", ".join(n.name for n in placeholders)
        raise ModelImportError(
            f"forward takes {len(placeholders)} input(s) ({names}); give one --input-shape for each"
        )
    inputs, dtype_notes = _integer_inputs(gm, inputs)
    prop = _ShapeProp(gm)
    try:
        # ShapeProp prints the traceback of a failing node itself; the message below says it all.
        with torch.no_grad(), contextlib.redirect_stderr(io.StringIO()):
            prop.propagate(*_zeros(inputs, PROP_BATCH))
    except Exception as exc:
        cause = exc.__cause__ or exc
        node = prop.current
        where = _location(node.stack_trace if node is not None else None, user_file)
        message = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        shapes = ", ".join(str([PROP_BATCH, *i.shape]) for i in inputs)
        hint = _dtype_hint(message, inputs)
        raise ModelImportError(
            _located(where, f"the model fails on a zero input of shape {shapes}: {message}{hint}")
        ) from exc
    conv = _Converter(module, gm, user_file)
    spec = conv.run(inputs)
    if not spec["outputs"] and not conv.problems:
        conv.problems.append("the model returns no tensor the spec can name")
    return ImportResult(spec, conv.state, conv.problems, [*dtype_notes, *conv.notes], list(inputs))


def check_outputs(
    module: nn.Module, result: ImportResult, inputs: Sequence[InputShape], seed: int = 0
) -> tuple[fx.GraphModule, float]:
    """Build the spec, load the weights and compare with the module on a random input.

    Returns (the built model, the largest absolute difference over all outputs).
    Raises engine.build.InvalidSpec when the spec does not validate and ModelImportError when
    the weights do not fit the built model.
    """
    from engine.build import build

    built = build(result.spec, seed=seed)
    try:
        built.load_state_dict(result.state_dict, strict=True)
    except RuntimeError as exc:
        raise ModelImportError(f"the weights do not fit the built spec: {exc}") from exc
    built.eval()
    module.eval()
    generator = torch.Generator().manual_seed(seed)
    vocab = min(
        (n["params"]["num_embeddings"] for n in result.spec["nodes"] if n["op"] == "Embedding"),
        default=10,
    )
    xs = []
    for i in inputs:
        shape = (CHECK_BATCH, *i.shape)
        if i.dtype == "int64":
            xs.append(torch.randint(0, vocab, shape, generator=generator))
        else:
            xs.append(torch.randn(shape, generator=generator))
    with torch.no_grad():
        want, got = module(*xs), built(*xs)
    want_t = list(want) if isinstance(want, tuple | list) else [want]
    got_t = list(got) if isinstance(got, tuple | list) else [got]
    if len(want_t) != len(got_t) or any(
        a.shape != b.shape for a, b in zip(want_t, got_t, strict=False)
    ):
        return built, math.inf
    diff = max(
        (float((a - b).abs().max()) if a.numel() else 0.0)
        for a, b in zip(want_t, got_t, strict=True)
    )
    return built, diff
