"""build(spec, seed) -> torch.fx.GraphModule whose submodules are named after the node ids."""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch import fx, nn

from engine.ops import registry
from engine.ops.registry import In
from engine.spec import split_ref
from engine.validate import Limits, ValidationReport, validate


class InvalidSpec(ValueError):
    """build() or codegen() was given a spec that does not validate; `.report` says why."""

    def __init__(self, report: ValidationReport) -> None:
        super().__init__(f"invalid graph spec: {report.summary()}")
        self.report = report


def checked(spec: Any, limits: Limits | None = None) -> ValidationReport:
    """Validate and raise InvalidSpec unless the spec is valid."""
    report = validate(spec, limits)
    if not report.valid:
        raise InvalidSpec(report)
    return report


def node_inputs(report: ValidationReport, node_id: str) -> list[In]:
    """The incoming edges of a node as its shape rule saw them."""
    assert report.spec is not None
    node = next(n for n in report.spec.nodes if n.id == node_id)
    result = []
    for ref in node.inputs:
        shape, dtype = report.ref_shape(ref)
        assert shape is not None
        result.append(In(ref, shape, dtype))
    return result


def build(spec: Any, seed: int = 0, limits: Limits | None = None) -> fx.GraphModule:
    """Turn a valid spec into a GraphModule; same spec and seed give the same weights.

    A block instance is a GraphModule of its own (named after the block) under the instance's
    id, so its parameters read `res1.conv1.weight`.

    Raises:
        InvalidSpec: the spec has errors (see `.report`).
    """
    report = checked(spec, limits)
    # fork_rng keeps the caller's global RNG untouched while seeding the initialisers.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return _graph_module(report, "Net")


def _graph_module(report: ValidationReport, class_name: str) -> fx.GraphModule:
    """The module of one checked graph or block body; initialisers draw from the global RNG in
    topological order, an instance's inner nodes where the instance stands."""
    assert report.spec is not None
    nodes_by_id = {n.id: n for n in report.spec.nodes}
    root = nn.Module()
    graph = fx.Graph()
    values: dict[str, fx.Node] = {}
    for inp in report.spec.inputs:
        values[inp.id] = graph.placeholder(inp.id)

    def value(ref: str) -> fx.Node:
        # Output k of a node with several outputs is one getitem on its tuple, made once.
        if ref not in values:
            node_id, port = split_ref(ref)
            values[ref] = graph.create_node(
                "call_function", operator.getitem, (values[node_id], port), name=f"{node_id}_{port}"
            )
        return values[ref]

    for node_id in report.order:
        node = nodes_by_id[node_id]
        args = [value(ref) for ref in node.inputs]
        inner = report.instances.get(node_id)
        if inner is not None:
            assert inner.block is not None
            root.add_module(node_id, _graph_module(inner, inner.block.name))
            values[node_id] = graph.create_node("call_module", node_id, tuple(args), name=node_id)
            continue
        op = registry[node.op]
        params = report.resolved[node_id]
        ins = node_inputs(report, node_id)
        if op.function is not None:
            values[node_id] = op.function.fx(graph, args, params, ins, node_id)
        else:
            root.add_module(node_id, op.make_module(params, ins))
            values[node_id] = graph.create_node("call_module", node_id, tuple(args), name=node_id)
    outs = [value(o) for o in report.spec.outputs]
    graph.output(outs[0] if len(outs) == 1 else tuple(outs))
    graph.lint()
    return fx.GraphModule(root, graph, class_name=class_name)
