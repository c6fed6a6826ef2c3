"""Blocks (spec version 2): reusable subgraphs placed as nodes whose op is "<name>@<version>".

A block's nodes are ordinary NodeSpecs; a parameter value written {"$param": "channels"} takes
the instance's value of the block parameter `channels`. validate() checks each instance by
checking the block's body with the instance's parameter values and incoming shapes (so shapes
flow through), build() makes each instance a GraphModule of its own (`res1.conv1.weight`),
codegen() writes one nn.Module class per block.

What those three share (the table of a spec's blocks with its cycles and depths, instance
parameters, `$param` substitution) lives in engine/block_table.py and is re-exported here; this
module adds two helpers for the service, the canvas and tests: `check_block` (one definition on
its own) and `block_from_nodes` (a block made from a selection of a spec's nodes).
"""

from __future__ import annotations

import keyword
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from engine.block_table import (
    MAX_BLOCK_DEPTH,
    PARAM_REF,
    BlockTable,
    block_key,
    body_spec,
    is_block_op,
    param_ref,
    resolve_instance_params,
    substitute,
    used_blocks,
)
from engine.ops import registry
from engine.spec import (
    BlockSpec,
    NodeSpec,
    SpecError,
    _loc_to_path,
    parse_spec,
    port_ref,
    split_ref,
)
from engine.validate import Limits, ValidationReport, check_block_body

__all__ = [
    "MAX_BLOCK_DEPTH",
    "PARAM_REF",
    "BlockTable",
    "block_from_nodes",
    "block_key",
    "body_spec",
    "check_block",
    "is_block_op",
    "param_ref",
    "resolve_instance_params",
    "substitute",
    "used_blocks",
]


def _parse_block(block: dict[str, Any] | BlockSpec, where: str) -> BlockSpec:
    if isinstance(block, BlockSpec):
        return block
    if not isinstance(block, dict):
        raise SpecError(
            f"{where} is not a block definition",
            [{"path": where, "message": f"expected an object, got {type(block).__name__}"}],
        )
    try:
        return BlockSpec.model_validate(block)
    except ValidationError as exc:
        problems = [
            {"path": _loc_to_path((where, *err["loc"])), "message": err["msg"]}
            for err in exc.errors(include_url=False)
        ]
        raise SpecError("not a block definition", problems) from None


def check_block(
    block: dict[str, Any] | BlockSpec,
    dependencies: Iterable[dict[str, Any] | BlockSpec] = (),
    input_shapes: Sequence[Sequence[int]] | None = None,
    limits: Limits | None = None,
) -> ValidationReport:
    """Check one block definition on its own: ids, ops (or blocks among `dependencies`), refs,
    cycles, declared params, nesting depth; with `input_shapes` (one per block input, float32)
    also the shapes, using the parameters' defaults.

    Problems name the block's inner nodes (`node: "conv1"`); a definition that does not parse
    is reported like validate() reports a document that is not a spec (`not_a_spec`, with the
    path in `field`: `block.nodes[0].id`, `dependencies[1].name`).
    """
    report = ValidationReport()
    try:
        parsed = _parse_block(block, "block")
        deps = [_parse_block(d, f"dependencies[{i}]") for i, d in enumerate(dependencies)]
    except SpecError as exc:
        for p in exc.problems[:50]:
            report.error(
                None, "not_a_spec", f"{exc.message}: {p['path']}: {p['message']}", p["path"]
            )
        return report
    paths = ["block", *(f"dependencies[{i}]" for i in range(len(deps)))]
    table = BlockTable.from_blocks([parsed, *deps], paths)
    return check_block_body(parsed, table, limits or Limits(), input_shapes, report)


# ---------------------------------------------------------------- making a block from nodes


def _current_value(node: NodeSpec, param: str, blocks: Sequence[BlockSpec]) -> Any:
    """A node's value of `param`: as set, else the op's (or the placed block's) default."""
    if param in node.params:
        return node.params[param]
    if is_block_op(node.op):
        block = next((b for b in blocks if b.key == node.op), None)
        declared = next((p for p in block.params if p.name == param), None) if block else None
        if declared is not None:
            return declared.default
    else:
        op = registry.get(node.op)
        definition = op.param(param) if op is not None else None
        if definition is not None:
            default = definition.default
            return list(default) if isinstance(default, tuple) else default
    raise ValueError(f"node '{node.id}' ({node.op}) has no parameter '{param}'")


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def block_from_nodes(
    spec: Any,
    node_ids: Sequence[str],
    name: str,
    expose: Mapping[str, Sequence[tuple[str, str] | Sequence[str]]] | None = None,
    *,
    version: int = 1,
    instance_id: str | None = None,
    description: str = "",
) -> tuple[BlockSpec, dict[str, Any]]:
    """Make a block of the nodes `node_ids` of `spec` and place one instance where they were.

    Edges into the selection become the block's inputs (one per distinct reference, in the
    order the selection first reads them), edges out of it its outputs (in the order the rest
    of the spec first reads them). `expose` maps a block parameter name to the (inner node id,
    parameter) pairs it sets: their current value becomes its default and each becomes
    {"$param": name}. The new spec is version 2, carries the block in `blocks`, and reads
    the instance (`instance_id`, default '<snake_name>1') where it read the selection; its
    state_dict keys are the old ones under the instance: `conv1.weight` -> `res1.conv1.weight`.

    Raises:
        SpecError: `spec` is not a spec.
        ValueError: the selection or `expose` does not make a block (a message naming why).
    """
    graph = parse_spec(spec)
    selected = list(dict.fromkeys(node_ids))
    by_id = {n.id: n for n in graph.nodes}
    if not selected:
        raise ValueError("select at least one node to make a block")
    for node_id in selected:
        if node_id not in by_id:
            kind = "a graph input" if any(i.id == node_id for i in graph.inputs) else "not a node"
            raise ValueError(f"'{node_id}' is {kind}; a block is made of nodes")
    chosen = set(selected)
    key = block_key(name, version)
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"block name {name!r} must be a Python identifier")
    if any(b.key == key for b in graph.blocks):
        raise ValueError(f"the spec already has a block {key}")

    # A selection that feeds a node outside which feeds it again would be a cycle. (Any outside
    # node the selection reaches, it reaches from its last selected node through outside ones.)
    feeds: dict[str, set[str]] = {n.id: set() for n in graph.nodes}
    for n in graph.nodes:
        for ref in n.inputs:
            base = split_ref(ref)[0]
            if base in feeds:
                feeds[base].add(n.id)
    downstream: set[str] = set()
    todo = [c for s in selected for c in feeds[s] if c not in chosen]
    while todo:
        reader = todo.pop()
        if reader in downstream:
            continue
        downstream.add(reader)
        todo.extend(c for c in feeds[reader] if c not in chosen)
    for node_id in selected:
        for ref in by_id[node_id].inputs:
            if split_ref(ref)[0] in downstream:
                raise ValueError(
                    f"'{split_ref(ref)[0]}' reads the selection and feeds '{node_id}' in it; "
                    "select it too or leave it out"
                )

    # Inputs: every outside reference the selection reads, in order.
    outside_refs = list(
        dict.fromkeys(
            ref
            for node_id in selected
            for ref in by_id[node_id].inputs
            if split_ref(ref)[0] not in chosen
        )
    )
    taken = set(chosen)
    port_ids: dict[str, str] = {}
    for i, ref in enumerate(outside_refs):
        port = "x" if len(outside_refs) == 1 else f"x{i}"
        while port in taken:
            port += "_in"
        taken.add(port)
        port_ids[ref] = port

    # Outputs: every reference to the selection from outside it, in order.
    readers = [n for n in graph.nodes if n.id not in chosen]
    out_refs = list(
        dict.fromkeys(
            [r for n in readers for r in n.inputs if split_ref(r)[0] in chosen]
            + [r for r in graph.outputs if split_ref(r)[0] in chosen]
        )
    )
    if not out_refs:
        raise ValueError("nothing outside the selection reads it; a block needs an output")

    # Exposed parameters.
    params: list[dict[str, Any]] = []
    replaced: dict[tuple[str, str], str] = {}
    for param_name, targets in (expose or {}).items():
        if not param_name.isidentifier() or keyword.iskeyword(param_name):
            raise ValueError(f"block parameter name {param_name!r} must be a Python identifier")
        values = []
        for target in targets:
            node_id, inner_param = target[0], target[1]
            if node_id not in chosen:
                raise ValueError(f"'{node_id}' (exposed as '{param_name}') is not in the selection")
            if (node_id, inner_param) in replaced:
                raise ValueError(f"{node_id}.{inner_param} is exposed twice")
            value = _current_value(by_id[node_id], inner_param, graph.blocks)
            values.append((node_id, inner_param, value))
            replaced[(node_id, inner_param)] = param_name
        if not values:
            raise ValueError(f"block parameter '{param_name}' sets no node parameter")
        first = values[0][2]
        for node_id, inner_param, value in values[1:]:
            if value != first:
                raise ValueError(
                    f"'{param_name}' would set {values[0][0]}.{values[0][1]} ({first!r}) and "
                    f"{node_id}.{inner_param} ({value!r}), which differ; expose them separately"
                )
        params.append({"name": param_name, "default": first})

    inner_nodes = []
    for node_id in selected:
        node = by_id[node_id]
        node_params = dict(node.params)
        for (target, inner_param), param_name in replaced.items():
            if target == node_id:
                node_params[inner_param] = {PARAM_REF: param_name}
        inner_nodes.append(
            {
                "id": node.id,
                "op": node.op,
                "params": node_params,
                "inputs": [port_ids.get(r, r) for r in node.inputs],
            }
        )
    layout = {k: v for k, v in graph.layout.items() if k in chosen}
    block = BlockSpec.model_validate(
        {
            "name": name,
            "version": version,
            "params": params,
            "inputs": [{"id": port_ids[r]} for r in outside_refs],
            "nodes": inner_nodes,
            "outputs": out_refs,
            "description": description,
            "layout": layout,
        }
    )

    ids = {i.id for i in graph.inputs} | set(by_id)
    inst = instance_id
    if inst is None:
        stem, number = _snake(name), 1
        while f"{stem}{number}" in ids:
            number += 1
        inst = f"{stem}{number}"
    elif inst in ids and inst not in chosen:
        raise ValueError(f"id '{inst}' is already used in the spec")
    out_port = {
        ref: (inst if len(out_refs) == 1 else port_ref(inst, k)) for k, ref in enumerate(out_refs)
    }
    instance = {
        "id": inst,
        "op": key,
        "params": {p["name"]: p["default"] for p in params},
        "inputs": outside_refs,
    }
    # The instance takes the place of the first selected node in the spec's order.
    selected_first = next(n.id for n in graph.nodes if n.id in chosen)
    nodes: list[dict[str, Any]] = []
    for n in graph.nodes:
        if n.id in chosen:
            if n.id == selected_first:
                nodes.append(instance)
            continue
        dumped = n.model_dump(mode="json")
        dumped["inputs"] = [out_port.get(r, r) for r in n.inputs]
        nodes.append(dumped)
    new_layout = {k: v for k, v in graph.layout.items() if k not in chosen}
    first_position = next((graph.layout[s] for s in selected if s in graph.layout), None)
    if first_position is not None:
        new_layout[inst] = first_position
    new_spec = graph.model_dump(mode="json")
    new_spec.update(
        version=2,
        nodes=nodes,
        outputs=[out_port.get(r, r) for r in graph.outputs],
        blocks=[*new_spec.get("blocks", []), block.model_dump(mode="json")],
        layout=new_layout,
    )
    return block, new_spec
