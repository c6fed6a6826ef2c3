"""validate(spec) -> ValidationReport: every problem, per-node shapes and sizes, no weights.

Shapes follow from each op's shape rule (plain arithmetic on per-sample shapes, checked
against the real modules on the `meta` device by the tests), so a billion-parameter design
is checked without allocating anything and a long chain costs microseconds per node.

A block instance (spec version 2, engine/blocks.py) is checked by checking the block's body
with the instance's parameters and incoming shapes; a problem inside it is reported on the
instance, naming the inner node, with `path` (outermost first) pointing at it.
"""

from __future__ import annotations

import difflib
import heapq
import json
import keyword
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from engine.block_table import (
    MAX_BLOCK_DEPTH,
    BlockTable,
    body_spec,
    is_block_op,
    param_ref,
    resolve_instance_params,
    substitute,
)
from engine.ops import registry
from engine.ops.registry import DTYPE_BYTES, In, OpDef, ShapeError, fmt_shape
from engine.spec import (
    DEFAULT_MAX_SPEC_BYTES,
    ID_PATTERN,
    BlockSpec,
    GraphSpec,
    InputSpec,
    NodeSpec,
    SpecError,
    parse_spec,
    port_ref,
    split_ref,
)

_ID_RE = re.compile(ID_PATTERN)
MAX_INPUT_RANK = 8
MAX_PROBLEMS_PER_INSTANCE = 10
MAX_DIM = 2**31 - 1


@dataclass(frozen=True)
class Limits:
    """What a design may cost before it is refused."""

    max_nodes: int = 2000
    max_params: int = 500_000_000
    max_activation_bytes: int = 1 << 30  # per sample, all node outputs together
    max_spec_bytes: int = DEFAULT_MAX_SPEC_BYTES


@dataclass(frozen=True)
class Problem:
    """One error or warning; `node` is None only for whole-graph problems.

    Inside a block instance, `node` is the (outermost) instance and `path` leads to the inner
    node at fault, outermost first: ("stage1", "res2", "conv1"); `field` is then the instance
    parameter the faulty value comes from, if it comes from one.
    """

    node: str | None
    code: str
    message: str
    field: str | None = None
    path: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """The problem as the API sends it (`path` only for a problem inside a block)."""
        out: dict[str, Any] = {
            "node": self.node,
            "code": self.code,
            "field": self.field,
            "message": self.message,
        }
        if self.path is not None:
            out["path"] = list(self.path)
        return out


@dataclass
class NodeInfo:
    """What validation learned about one node (shape None: unknown because of an error)."""

    op: str
    shape: tuple[int, ...] | None = None
    params: int | None = None
    dtype: str | None = None
    # A node with several outputs: one shape per port (`shape` is port 0's).
    ports: tuple[tuple[int, ...], ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """The node's entry in the report JSON (`ports` only for a node with several outputs)."""
        out: dict[str, Any] = {
            "op": self.op,
            "shape": list(self.shape) if self.shape is not None else None,
            "params": self.params,
        }
        if self.ports is not None:
            out["ports"] = [list(p) for p in self.ports]
        return out


@dataclass
class ValidationReport:
    """The answer of validate(); `to_json()` is what the API serves unchanged."""

    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    outputs: dict[str, tuple[int, ...] | None] = field(default_factory=dict)
    total_params: int = 0
    activation_bytes: int = 0
    # For build() and codegen(): the parsed spec, live nodes in topological order,
    # parameters with defaults filled in.
    spec: GraphSpec | None = field(default=None, repr=False)
    order: list[str] = field(default_factory=list, repr=False)
    resolved: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    # Blocks: each instance node -> the report of its body (shared by instances that have the
    # same parameters and input shapes); for such a report, the block it checked, the block
    # parameters' values, and per inner node its parameters whose whole value is
    # {"$param": p} -> p.
    instances: dict[str, ValidationReport] = field(default_factory=dict, repr=False)
    block: BlockSpec | None = field(default=None, repr=False)
    values: dict[str, Any] = field(default_factory=dict, repr=False)
    bindings: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)
    # Live nodes with every instance counted as the nodes of its body, recursively.
    expanded_nodes: int = field(default=0, repr=False)

    @property
    def valid(self) -> bool:
        """True when there is no error (warnings do not count)."""
        return not self.errors

    def error(self, node: str | None, code: str, message: str, field: str | None = None) -> None:
        """Record one error."""
        self.errors.append(Problem(node, code, message, field))

    def ref_shape(self, ref: str) -> tuple[tuple[int, ...] | None, str]:
        """Shape and dtype of what a reference ('fc1' or 'split1:1') reads."""
        node, port = split_ref(ref)
        info = self.nodes[node]
        dtype = info.dtype or "float32"
        if port is None or info.ports is None:
            return info.shape, dtype
        return (info.ports[port] if port < len(info.ports) else None), dtype

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (docs/subsystems/engine.md)."""
        return {
            "valid": self.valid,
            "errors": [e.to_json() for e in self.errors],
            "warnings": [w.to_json() for w in self.warnings],
            "nodes": {k: v.to_json() for k, v in self.nodes.items()},
            "outputs": {k: list(v) if v is not None else None for k, v in self.outputs.items()},
            "total_params": self.total_params,
            "activation_bytes": self.activation_bytes,
        }

    def summary(self, limit: int = 5) -> str:
        """The first few errors on one line, for exception messages and the CLI."""
        parts = [f"{e.node}: {e.message}" if e.node else e.message for e in self.errors[:limit]]
        more = f" (and {len(self.errors) - limit} more)" if len(self.errors) > limit else ""
        return "; ".join(parts) + more


@cache
def reserved_ids() -> frozenset[str]:
    """Ids that would clash with module attributes or names the generated source uses."""
    from torch import fx, nn

    graph_module = fx.GraphModule(nn.Module(), fx.Graph())
    names = set(dir(graph_module)) | set(vars(graph_module))
    return frozenset(names | set(keyword.kwlist) | {"self", "torch", "nn", "super"})


def _id_problem(node_id: str) -> str | None:
    if not _ID_RE.match(node_id):
        shown = node_id if len(node_id) <= 40 else node_id[:40] + "..."
        return (
            f"id {shown!r} must start with a letter or _, contain only letters, digits and _, "
            "and be at most 64 characters"
        )
    if node_id in reserved_ids():
        return f"id '{node_id}' is reserved (a Python keyword or an nn.Module attribute); choose another"
    return None


def _short(node_id: str) -> str:
    return node_id if len(node_id) <= 64 else node_id[:64] + "..."


def validate(spec_or_dict: Any, limits: Limits | None = None) -> ValidationReport:
    """Check a spec (GraphSpec, dict, JSON text or bytes); never raises for bad user input."""
    limits = limits or Limits()
    report = ValidationReport()
    try:
        spec = parse_spec(spec_or_dict, max_bytes=limits.max_spec_bytes)
    except SpecError as exc:
        problems = exc.problems or [{"path": "(document)", "message": exc.message}]
        for p in problems[:50]:
            message = (
                exc.message
                if p["path"] == "(document)"
                else f"{exc.message}: {p['path']}: {p['message']}"
            )
            report.error(
                None, "not_a_spec", message, None if p["path"] == "(document)" else p["path"]
            )
        return report
    report.spec = spec
    if len(spec.nodes) > limits.max_nodes:
        report.error(
            None,
            "too_many_nodes",
            f"the graph has {len(spec.nodes)} nodes, the limit is {limits.max_nodes}",
        )
        return report
    table = BlockTable.from_blocks(spec.blocks)
    for where, code, message in table.problems:
        report.error(None, code, message, where)
    _Checker(spec, limits, report, table).run()
    if spec.blocks:
        _check_blocks_use(spec, table, limits, report)
    return report


def _check_blocks_use(
    spec: GraphSpec, table: BlockTable, limits: Limits, report: ValidationReport
) -> None:
    used = table.reachable(n.op for n in spec.nodes if n.op in table.by_key)
    for key in table.by_key:
        if key not in used:
            report.warnings.append(
                Problem(None, "unused_block", f"block {key} is defined but not used", "blocks")
            )
    if report.expanded_nodes > limits.max_nodes:
        report.error(
            None,
            "too_many_nodes",
            f"the graph has {report.expanded_nodes} nodes once its blocks are expanded, "
            f"the limit is {limits.max_nodes}",
        )


def check_block_body(
    block: BlockSpec,
    table: BlockTable,
    limits: Limits,
    input_shapes: Any,
    report: ValidationReport,
) -> ValidationReport:
    """engine.blocks.check_block's work, once the definitions parse; `table` holds `block` and
    its dependencies."""
    report.block = block
    for where, code, message in table.problems:
        report.error(None, code, message, where)
    if table.on_cycle(block.key) is not None:
        return report  # the table's problems name the cycle
    if len(block.nodes) > limits.max_nodes:
        report.error(
            None,
            "too_many_nodes",
            f"the block has {len(block.nodes)} nodes, the limit is {limits.max_nodes}",
            "nodes",
        )
        return report
    if table.height(block.key) > MAX_BLOCK_DEPTH:
        chain = " -> ".join(table.deepest_chain(block.key))
        report.error(
            None,
            "too_deep",
            f"blocks nest {table.height(block.key)} deep ({chain}); the limit is {MAX_BLOCK_DEPTH}",
            "nodes",
        )
        return report
    shapes = None
    if input_shapes is not None:
        shapes = [list(s) for s in input_shapes]
        if len(shapes) != len(block.inputs):
            report.error(
                None,
                "arity",
                f"{block.key} has {len(block.inputs)} inputs, got {len(shapes)} input shapes",
                "inputs",
            )
            return report
        for s in shapes:
            if not all(isinstance(d, int) and not isinstance(d, bool) for d in s):
                report.error(None, "bad_param", f"input shape {s!r} must be a list of integers")
                return report
    spec = body_spec(block, [(s, "float32") for s in shapes] if shapes is not None else None)
    report.spec = spec
    values = {p.name: p.default for p in block.params}
    report.values = values
    checker = _Checker(spec, limits, report, table, values=values, block=block)
    checker.shapes = shapes is not None
    checker.run()
    referenced = {
        name
        for node in block.nodes
        for value in node.params.values()
        for name in _references(value)
    }
    for p in block.params:
        if p.name not in referenced:
            report.warnings.append(
                Problem(None, "unused", f"parameter '{p.name}' is not used by any node", "params")
            )
    return report


def _references(value: Any) -> Iterable[str]:
    name = param_ref(value)
    if name is not None:
        yield name
    elif isinstance(value, list):
        for item in value:
            yield from _references(item)


class _Checker:
    """One validation pass; iterative throughout so long chains cannot overflow the stack."""

    def __init__(
        self,
        spec: GraphSpec,
        limits: Limits,
        report: ValidationReport,
        table: BlockTable | None = None,
        *,
        values: dict[str, Any] | None = None,
        block: BlockSpec | None = None,
        memo: dict[Any, ValidationReport] | None = None,
    ) -> None:
        self.spec = spec
        self.limits = limits
        self.report = report
        # Blocks: the spec's definitions; inside a block's body, the block and the instance's
        # parameter values ({"$param": p} reads values[p]); bodies checked so far, shared.
        self.table = table or BlockTable()
        self.values = values
        self.block = block
        self.memo: dict[Any, ValidationReport] = {} if memo is None else memo
        self.shapes = True  # False: structure only (check_block without input shapes)
        self.instance_of: dict[str, BlockSpec] = {}
        self.inputs: dict[str, InputSpec] = {}  # first definition of each id
        self.nodes: dict[str, NodeSpec] = {}
        self.ops: dict[str, OpDef] = {}
        self.broken: set[str] = set()  # nodes whose own definition is wrong
        self.deps: dict[str, list[str]] = {}  # node -> defined ids it reads, in order
        self.consumers: dict[str, list[str]] = {}  # node -> nodes that read it

    def run(self) -> None:
        self.check_ids()
        self.check_nodes()
        self.check_outputs()
        order, cyclic = self.topological_order()
        self.report_cycles(cyclic)
        live = self.live_nodes()
        if self.shapes:
            self.infer_shapes(order)
        self.report.order = [n for n in order if n in live]
        self.report.expanded_nodes = sum(
            self.report.instances[n].expanded_nodes if n in self.report.instances else 1
            for n in self.report.order
        )
        self.warn_unused(live)
        self.check_limits(live)

    # ------------------------------------------------------------ structure

    def check_ids(self) -> None:
        report = self.report
        for inp in self.spec.inputs:
            problem = _id_problem(inp.id)
            if problem:
                report.error(_short(inp.id), "bad_id", problem, "id")
            if inp.id in self.inputs:
                report.error(
                    inp.id, "duplicate_id", f"id '{inp.id}' is used by more than one input"
                )
                continue
            self.inputs[inp.id] = inp
            shape = tuple(inp.shape)
            info = NodeInfo("Input", None, 0, inp.dtype)
            report.nodes[inp.id] = info
            if not 1 <= len(shape) <= MAX_INPUT_RANK:
                report.error(
                    inp.id,
                    "bad_param",
                    f"input '{inp.id}' needs 1 to {MAX_INPUT_RANK} dimensions, got {len(shape)}",
                    "shape",
                )
            elif any(not 1 <= d <= MAX_DIM for d in shape):
                report.error(
                    inp.id,
                    "bad_param",
                    f"input '{inp.id}' dimensions must be between 1 and {MAX_DIM}, got {list(shape)}",
                    "shape",
                )
            else:
                info.shape = shape
        for node in self.spec.nodes:
            problem = _id_problem(node.id)
            if problem:
                report.error(_short(node.id), "bad_id", problem, "id")
                self.broken.add(node.id)
            if node.id in self.inputs or node.id in self.nodes:
                report.error(node.id, "duplicate_id", f"id '{node.id}' is used more than once")
                continue
            self.nodes[node.id] = node
            report.nodes[node.id] = NodeInfo(node.op)

    def check_nodes(self) -> None:
        report = self.report
        for node_id, node in self.nodes.items():
            params: dict[str, Any] = node.params
            unset: set[str] = set()
            if self.values is not None:
                params, unset = self.substituted(node_id, node)
            op = registry.get(node.op)
            if is_block_op(node.op):
                self.check_instance(node_id, node, params)
            elif op is None:
                close = difflib.get_close_matches(node.op, registry.names(), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                report.error(node_id, "unknown_op", f"unknown op '{node.op[:64]}'{hint}", "op")
                self.broken.add(node_id)
            else:
                self.ops[node_id] = op
                resolved, problems = op.resolve_params(params)
                # A reference to an undeclared block parameter is reported once, not twice.
                problems = [p for p in problems if p[1] not in unset]
                for code, field_name, message in problems:
                    report.error(node_id, code, message, field_name)
                if problems:
                    self.broken.add(node_id)
                report.resolved[node_id] = resolved
                lo, hi = op.arity
                n = len(node.inputs)
                if n < lo or (hi is not None and n > hi):
                    if hi == lo:
                        want = f"{lo} input" + ("s" if lo != 1 else "")
                    elif hi is None:
                        want = f"at least {lo} inputs"
                    else:
                        want = f"{lo} to {hi} inputs"
                    report.error(node_id, "arity", f"{op.name} takes {want}, got {n}", "inputs")
                    self.broken.add(node_id)
            deps = []
            for ref in node.inputs:
                base, _ = split_ref(ref)
                if base in self.nodes or base in self.inputs:
                    deps.append(base)
                else:
                    report.error(
                        node_id,
                        "dangling_input",
                        f"input '{_short(ref)}' is not a node or input id",
                        "inputs",
                    )
                    self.broken.add(node_id)
            self.deps[node_id] = deps

    def substituted(self, node_id: str, node: NodeSpec) -> tuple[dict[str, Any], set[str]]:
        """A block body's node parameters with the instance's values put in, and the
        parameters that refer to an undeclared block parameter (reported here)."""
        assert self.values is not None and self.block is not None
        params, bound, undeclared = substitute(node.params, self.values)
        if bound:
            self.report.bindings[node_id] = bound
        declared = ", ".join(p.name for p in self.block.params) or "none"
        for key, name in undeclared:
            self.report.error(
                node_id,
                "bad_param",
                f"'{key}' refers to parameter '{name[:64]}', which block {self.block.key} does "
                f"not declare (declared: {declared})",
                key,
            )
            self.broken.add(node_id)
        return params, {key for key, _ in undeclared}

    def check_instance(self, node_id: str, node: NodeSpec, params: dict[str, Any]) -> None:
        """A node whose op is a block: the block exists, is sound, and gets the right inputs."""
        report = self.report
        block = self.table.by_key.get(node.op)
        if block is None:
            hint = self.table.unknown_block_hint(node.op)
            if self.spec.version == 1 and self.block is None:
                hint = " (blocks need spec version 2)"
            report.error(node_id, "unknown_op", f"unknown block '{node.op[:64]}'{hint}", "op")
            self.broken.add(node_id)
            return
        cycle = self.table.cycle_problem(block.key)
        if cycle is not None:
            report.error(node_id, "block_cycle", cycle, "op")
            self.broken.add(node_id)
            return
        # A body's own instances nest less deeply than it does; checking the top suffices.
        height = self.table.height(block.key)
        if self.block is None and height > MAX_BLOCK_DEPTH:
            chain = " -> ".join(self.table.deepest_chain(block.key))
            report.error(
                node_id,
                "too_deep",
                f"blocks nest {height} deep ({chain}); the limit is {MAX_BLOCK_DEPTH}",
                "op",
            )
            self.broken.add(node_id)
            return
        if len(block.nodes) > self.limits.max_nodes:
            report.error(
                node_id,
                "too_many_nodes",
                f"block {block.key} has {len(block.nodes)} nodes, the limit is "
                f"{self.limits.max_nodes}",
                "op",
            )
            self.broken.add(node_id)
            return
        resolved, problems = resolve_instance_params(block, params)
        report.resolved[node_id] = resolved
        for code, field_name, message in problems:
            report.error(node_id, code, message, field_name)
        if problems:
            self.broken.add(node_id)
        want, got = len(block.inputs), len(node.inputs)
        if got != want:
            names = ", ".join(p.id for p in block.inputs)
            plural = "input" if want == 1 else "inputs"
            report.error(
                node_id,
                "arity",
                f"{block.key} takes {want} {plural} ({names}), got {got}",
                "inputs",
            )
            self.broken.add(node_id)
        self.instance_of[node_id] = block

    def infer_instance(self, node_id: str, ins: list[In]) -> None:
        """Shapes through an instance: check the block's body with its parameters and inputs."""
        report = self.report
        block = self.instance_of[node_id]
        values = report.resolved[node_id]
        key = (
            block.key,
            json.dumps(values, sort_keys=True, default=repr),
            tuple((i.shape, i.dtype) for i in ins),
        )
        inner = self.memo.get(key)
        if inner is None:
            inner = ValidationReport()
            body = body_spec(block, [(i.shape, i.dtype) for i in ins])
            inner.spec, inner.block, inner.values = body, block, values
            _Checker(
                body, self.limits, inner, self.table, values=values, block=block, memo=self.memo
            ).run()
            self.memo[key] = inner
        report.instances[node_id] = inner
        # A few problems per instance: instances side by side, nested deep, would otherwise
        # multiply one mistake in a block into millions of messages.
        for problem in inner.errors[:MAX_PROBLEMS_PER_INSTANCE]:
            report.errors.append(self.adopted(node_id, block, inner, problem))
        if len(inner.errors) > MAX_PROBLEMS_PER_INSTANCE:
            more = len(inner.errors) - MAX_PROBLEMS_PER_INSTANCE
            report.error(node_id, "more_errors", f"in block {block.key}: and {more} more errors")
        for problem in inner.warnings[:MAX_PROBLEMS_PER_INSTANCE]:
            report.warnings.append(self.adopted(node_id, block, inner, problem))
        if not inner.valid:
            return
        info = report.nodes[node_id]
        outs = [inner.ref_shape(o) for o in block.outputs]
        info.params = inner.total_params
        info.dtype = outs[0][1]
        if len(outs) == 1:
            info.shape = outs[0][0]
            return
        if len({dtype for _, dtype in outs}) > 1:
            kinds = ", ".join(
                f"{o} {dtype}" for o, (_, dtype) in zip(block.outputs, outs, strict=True)
            )
            report.error(
                node_id,
                "dtype_mismatch",
                f"the outputs of block {block.key} must share one dtype, got {kinds}",
            )
            return
        info.ports = tuple(shape for shape, _ in outs if shape is not None)
        info.shape = info.ports[0]

    @staticmethod
    def adopted(
        node_id: str, block: BlockSpec, inner: ValidationReport, problem: Problem
    ) -> Problem:
        """An inner problem as the instance reports it."""
        where = (
            f"in block {block.key}, node {problem.node}"
            if problem.node
            else f"in block {block.key}"
        )
        path = (node_id, *(problem.path or ((problem.node,) if problem.node else ())))
        field_name = None
        if problem.node is not None and problem.field is not None:
            field_name = inner.bindings.get(problem.node, {}).get(problem.field)
        return Problem(node_id, problem.code, f"{where}: {problem.message}", field_name, path)

    def check_outputs(self) -> None:
        if not self.spec.outputs:
            what = "the graph" if self.block is None else "the block"
            self.report.error(
                None, "no_outputs", f"{what} has no outputs; mark at least one node as an output"
            )
        for out in self.spec.outputs:
            base, _ = split_ref(out)
            if base not in self.nodes and base not in self.inputs:
                self.report.error(
                    _short(out),
                    "unreachable",
                    f"output '{_short(out)}' is not a node or input id",
                    "outputs",
                )

    def topological_order(self) -> tuple[list[str], set[str]]:
        """Kahn's algorithm, ties broken by spec order; returns (order, nodes left over)."""
        index = {node_id: i for i, node_id in enumerate(self.nodes)}
        pending = {n: sum(1 for d in deps if d in self.nodes) for n, deps in self.deps.items()}
        consumers: dict[str, list[str]] = {n: [] for n in self.nodes}
        for n, deps in self.deps.items():
            for d in deps:
                if d in consumers:
                    consumers[d].append(n)
        ready = [(index[n], n) for n, count in pending.items() if count == 0]
        heapq.heapify(ready)
        order: list[str] = []
        while ready:
            _, n = heapq.heappop(ready)
            order.append(n)
            for c in consumers[n]:
                pending[c] -= 1
                if pending[c] == 0:
                    heapq.heappush(ready, (index[c], c))
        self.consumers = consumers
        return order, set(self.nodes) - set(order)

    def report_cycles(self, left: set[str]) -> None:
        """Name the nodes on each cycle; nodes merely downstream of one stay silent."""
        if not left:
            return
        position = {n: i for i, n in enumerate(self.nodes)}
        for component in _strongly_connected(left, self.deps):
            if len(component) == 1:
                (only,) = component
                if only not in self.deps.get(only, []):
                    continue
            members = set(component)
            path = _cycle_path(min(component, key=position.__getitem__), members, self.consumers)
            shown = path + [path[0]]
            if len(shown) > 12:  # keep each message short even for a 10,000-node loop
                shown = shown[:5] + ["..."] + shown[-5:]
                text = " -> ".join(shown) + f" ({len(path)} nodes)"
            else:
                text = " -> ".join(shown)
            for n in path:
                self.report.error(n, "cycle", f"cycle: {text}", "inputs")
                self.broken.add(n)

    def live_nodes(self) -> set[str]:
        """Nodes that some output depends on."""
        live: set[str] = set()
        stack = [b for b in (split_ref(o)[0] for o in self.spec.outputs) if b in self.nodes]
        while stack:
            n = stack.pop()
            if n in live:
                continue
            live.add(n)
            stack.extend(d for d in self.deps[n] if d in self.nodes and d not in live)
        return live

    # ------------------------------------------------------------ shapes

    def infer_shapes(self, order: Iterable[str]) -> None:
        report = self.report
        for node_id in order:
            info = report.nodes[node_id]
            if node_id in self.broken:
                continue
            op = self.ops.get(node_id)
            ins: list[In] = []
            refs = [r for r in self.nodes[node_id].inputs if split_ref(r)[0] in report.nodes]
            for ref in refs:
                src = report.nodes[split_ref(ref)[0]]
                if src.shape is None:
                    break  # upstream already reported; stay quiet here
                problem = self.port_problem(ref)
                if problem:
                    report.error(node_id, "dangling_input", problem, "inputs")
                    break
                shape, dtype = report.ref_shape(ref)
                assert shape is not None
                ins.append(In(ref, shape, dtype))
            else:
                if op is None:
                    self.infer_instance(node_id, ins)
                    continue
                bad_dtype = [i for i in ins if i.dtype not in op.input_dtypes]
                if bad_dtype:
                    want = " or ".join(op.input_dtypes)
                    got = " and ".join(f"{i.dtype} from {i.source}" for i in bad_dtype)
                    report.error(
                        node_id,
                        "dtype_mismatch",
                        f"{op.name} needs {want} input, got {got}",
                        "inputs",
                    )
                    continue
                try:
                    result = op.run_infer(report.resolved[node_id], ins)
                except ShapeError as exc:
                    report.error(node_id, exc.code, exc.message, exc.field)
                    continue
                except Exception as exc:  # a shape rule must never turn user input into a crash
                    report.error(
                        node_id,
                        "shape_mismatch",
                        f"{op.name} cannot take {', '.join(map(str, ins))}: {exc}",
                    )
                    continue
                info.shape, info.dtype, info.params = result.shape, result.dtype, result.params
                info.ports = result.ports if op.multi_output else None
        for out in self.spec.outputs:
            base, _ = split_ref(out)
            if base not in report.nodes:
                continue
            problem = self.port_problem(out) if report.nodes[base].shape is not None else None
            if problem:
                report.error(base, "unreachable", problem, "outputs")
                report.outputs[out] = None
            else:
                report.outputs[out] = report.ref_shape(out)[0]

    def port_problem(self, ref: str) -> str | None:
        """Why a reference to a node with a known shape names no output of it, or None."""
        base, port = split_ref(ref)
        info = self.report.nodes[base]
        if info.ports is None:
            if port is None:
                return None
            return f"'{base}' has one output; refer to it as '{base}', not '{_short(ref)}'"
        count = len(info.ports)
        if port is None:
            return (
                f"'{base}' has {count} outputs; refer to one of them as "
                f"'{port_ref(base, 0)}' .. '{port_ref(base, count - 1)}'"
            )
        if port >= count:
            return f"'{base}' has {count} outputs (0..{count - 1}); there is no output {port}"
        return None

    # ------------------------------------------------------------ warnings and limits

    def warn_unused(self, live: set[str]) -> None:
        used_inputs = {d for n in live for d in self.deps[n]} | {
            split_ref(o)[0] for o in self.spec.outputs
        }
        for inp in self.inputs:
            if inp not in used_inputs:
                self.report.warnings.append(
                    Problem(inp, "unused", f"input '{inp}' is not used by any output")
                )
        for n in self.nodes:
            if n not in live:
                self.report.warnings.append(
                    Problem(
                        n,
                        "unreachable",
                        f"'{n}' does not lead to any output; it is left out of the model",
                    )
                )

    def check_limits(self, live: set[str]) -> None:
        report, limits = self.report, self.limits
        counted = [n for n in report.order if report.nodes[n].params is not None]
        report.total_params = sum(report.nodes[n].params or 0 for n in counted)

        def activation(node_id: str) -> int:
            info = report.nodes[node_id]
            if info.shape is None:
                return 0
            values = sum(map(math.prod, info.ports)) if info.ports else math.prod(info.shape)
            return values * DTYPE_BYTES.get(info.dtype or "float32", 4)

        sized = list(self.inputs) + [n for n in report.order if report.nodes[n].shape is not None]
        report.activation_bytes = sum(activation(n) for n in sized)
        # An instance's inner values count too (its inputs are counted where they come from).
        for n in report.order:
            inner = report.instances.get(n)
            if inner is not None and inner.valid:
                report.activation_bytes += inner.activation_bytes - _input_bytes(inner)
        if self.block is not None:
            return  # a block's body: the graph that places it enforces the limits
        if report.total_params > limits.max_params and counted:
            biggest = max(counted, key=lambda n: report.nodes[n].params or 0)
            report.error(
                biggest,
                "too_many_params",
                f"the graph has {report.total_params:,} parameters ({biggest} alone has "
                f"{report.nodes[biggest].params:,}); the limit is {limits.max_params:,}",
            )
        if report.activation_bytes > limits.max_activation_bytes and sized:
            biggest = max(sized, key=activation)
            report.error(
                biggest,
                "too_much_memory",
                f"activations need {report.activation_bytes:,} bytes per sample ({biggest} "
                f"{fmt_shape(report.nodes[biggest].shape)} alone {activation(biggest):,}); "
                f"the limit is {limits.max_activation_bytes:,}",
            )


def _input_bytes(report: ValidationReport) -> int:
    assert report.spec is not None
    return sum(math.prod(i.shape) * DTYPE_BYTES.get(i.dtype, 4) for i in report.spec.inputs)


def _strongly_connected(nodes: set[str], deps: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm without recursion, over `nodes` and their dependency edges."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            succ = [w for w in deps.get(v, []) if w in nodes]
            recursed = False
            while i < len(succ):
                w = succ[i]
                i += 1
                if w not in index:
                    work.append((v, i))
                    work.append((w, 0))
                    recursed = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if recursed:
                continue
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                result.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return result


def _cycle_path(start: str, members: set[str], consumers: dict[str, list[str]]) -> list[str]:
    """A shortest data-flow cycle through `start` inside one strongly connected component."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for v in frontier:
            for w in consumers.get(v, []):
                if w not in members:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return list(reversed(path))
                if w not in previous:
                    previous[w] = v
                    following.append(w)
        frontier = following
    return [start]
