"""Reads of the graphs app that other apps call: a graph's latest revision, what changed between two.

The diff (`spec_diff`, `diff_lines`) lives here: GET /api/graphs/<id>/diff/ and the runs compare view.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from django.db.models import Max, Q, QuerySet

from webapp.errors import NotFound

from .models import Graph, GraphRevision

# The revisions people saved: a sweep's variants (origin set) are never a graph's latest.
SAVED = Q(origin="")


def revision_latest(*, graph: Graph, with_spec: bool = True) -> GraphRevision | None:
    """The newest revision someone saved (a sweep's architecture variants skipped); `with_spec`
    False leaves the spec column unread (who saved it and when, for the editor's poll)."""
    revisions = graph.revisions.filter(SAVED).select_related("created_by").order_by("-number")
    return (revisions if with_spec else revisions.defer("spec")).first()


def graph_name_warnings(*, graph: Graph) -> list[dict[str, Any]]:
    """What a create or rename should tell: a `duplicate_name` warning when other graphs of the
    team have the same name (case aside). Names are not unique, so this never refuses; a person
    picking a graph by name from a list would not know which is which.

    Each warning: {code, field, message, graphs: [ids of the others]}.
    """
    others = list(
        Graph.objects.filter(team_id=graph.team_id, name__iexact=graph.name)
        .exclude(pk=graph.pk).order_by("pk").values_list("pk", flat=True)
    )
    if not others:
        return []
    which = ", ".join(str(pk) for pk in others)
    return [{
        "code": "duplicate_name",
        "field": "name",
        "message": f"Your team already has a graph named \"{graph.name}\" (graph {which}); "
        "both keep the name, so rename one to tell them apart.",
        "graphs": others,
    }]


def graphs_with_latest_number(queryset: QuerySet[Graph]) -> QuerySet[Graph]:
    """`latest_number` on each graph: the number of `revision_latest`."""
    return queryset.annotate(latest_number=Max("revisions__number", filter=Q(revisions__origin="")))


def _spec_of(revision_or_spec: Any) -> dict[str, Any]:
    spec = getattr(revision_or_spec, "spec", revision_or_spec)
    return spec if isinstance(spec, dict) else {}


def _short(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(", ", ": ")) if not isinstance(value, str) else value


def _by_id(items: Any) -> dict[str, dict[str, Any]]:
    return {str(item.get("id")): item for item in items or [] if isinstance(item, dict)}


def _edges(nodes: dict[str, dict[str, Any]]) -> Counter[tuple[str, str]]:
    """Every wire (source reference "n" or "n:k", target node id), counted: Add(x, x) reads x twice."""
    return Counter((str(src), name) for name, node in nodes.items() for src in node.get("inputs") or [])


def _kept_order(inputs: list[str], kept: Counter[str]) -> list[str]:
    left, order = Counter(kept), []
    for ref in inputs:
        if left[ref] > 0:
            left[ref] -= 1
            order.append(ref)
    return order


def _changes(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """[{name, from, to}] of the keys whose value differs (null: not set, the op's default)."""
    return [
        {"name": key, "from": old.get(key), "to": new.get(key)}
        for key in sorted(old.keys() | new.keys())
        if old.get(key) != new.get(key)
    ]


def _blocks_by_ref(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A v2 spec's block definitions by `Name@version`, without their canvas-only parts."""
    found: dict[str, dict[str, Any]] = {}
    for block in spec.get("blocks") or []:
        if isinstance(block, dict):
            executable = {k: v for k, v in block.items() if k not in ("layout", "ui", "description")}
            found[f"{block.get('name')}@{block.get('version')}"] = executable
    return found


def _block_params(block: dict[str, Any]) -> dict[str, Any]:
    return {str(p.get("name")): p.get("default") for p in block.get("params") or [] if isinstance(p, dict)}


def _block_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs inside one block definition kept under the same `Name@version`, as lines."""
    lines = []
    params_a, params_b = _block_params(old), _block_params(new)
    lines += [f"param {name} removed" for name in params_a if name not in params_b]
    lines += [f"param {name} added" for name in params_b if name not in params_a]
    lines += [
        f"param {name} default: {_short(params_a[name])} -> {_short(params_b[name])}"
        for name in params_b
        if name in params_a and params_a[name] != params_b[name]
    ]
    # The block's own graph reads like a spec: its inputs are ports without shapes.
    return lines + diff_lines(spec_diff(old, new))


def _blocks_diff(spec_a: dict[str, Any], spec_b: dict[str, Any]) -> dict[str, Any]:
    blocks_a, blocks_b = _blocks_by_ref(spec_a), _blocks_by_ref(spec_b)
    changed = []
    for ref in (r for r in blocks_b if r in blocks_a and blocks_a[r] != blocks_b[r]):
        changed.append({"ref": ref, "lines": _block_changes(blocks_a[ref], blocks_b[ref]) or ["definition changed"]})
    return {
        "added": [r for r in blocks_b if r not in blocks_a],
        "removed": [r for r in blocks_a if r not in blocks_b],
        "changed": changed,
    }


def spec_diff(a: Any, b: Any) -> dict[str, Any]:
    """What changed from revision (or spec) `a` to `b`, structured (GET /api/graphs/<id>/diff/).

    {"nodes": {"added": [{id, op, params}], "removed": [...], "changed": [{id, op: {from, to} |
    null, params: [{name, from, to}], inputs: {from, to} | null}]}, "edges": {"added": [{source,
    target}], "removed": [...]}, "inputs": {"added": [{id, shape, dtype}], "removed": [...],
    "changed": [{id, params: [{name, from, to}]}]}, "outputs": {from, to} | null, "blocks": {"added":
    ["Name@v"], "removed": [...], "changed": [{ref, lines}]}}.

    An edge is one entry of a node's `inputs` (source "n" or port "n:k", target the node), counted
    (Add(x, x) has two). A node is changed when its op or a parameter differs (a parameter absent
    on one side is null there: the op's default), or when the inputs it keeps are read in another
    order (`inputs`: both lists). A renamed node is one removed and one added. Layout and UI
    never count. Nodes keep the spec's order; edges are sorted.

    Block instances are nodes like any other: an upgrade (`ResBlock@1` -> `ResBlock@2`) is an op
    change, a block parameter a parameter change. `blocks` says which definitions a v2 spec
    carries that the other does not, and what changed inside one kept under the same `Name@v`.
    """
    spec_a, spec_b = _spec_of(a), _spec_of(b)
    inputs_a, inputs_b = _by_id(spec_a.get("inputs")), _by_id(spec_b.get("inputs"))

    def input_entry(item: dict[str, Any]) -> dict[str, Any]:
        return {"id": item.get("id"), "shape": item.get("shape"), "dtype": item.get("dtype", "float32")}

    inputs = {
        "added": [input_entry(inputs_b[i]) for i in inputs_b if i not in inputs_a],
        "removed": [input_entry(inputs_a[i]) for i in inputs_a if i not in inputs_b],
        "changed": [],
    }
    for name in (i for i in inputs_b if i in inputs_a):
        old, new = input_entry(inputs_a[name]), input_entry(inputs_b[name])
        fields = [c for c in _changes(old, new) if c["name"] != "id"]
        if fields:
            inputs["changed"].append({"id": name, "params": fields})

    nodes_a, nodes_b = _by_id(spec_a.get("nodes")), _by_id(spec_b.get("nodes"))

    def node_entry(node: dict[str, Any]) -> dict[str, Any]:
        return {"id": node.get("id"), "op": node.get("op"), "params": dict(node.get("params") or {})}

    edges_a, edges_b = _edges(nodes_a), _edges(nodes_b)
    changed: list[dict[str, Any]] = []
    for name in (n for n in nodes_b if n in nodes_a):
        old, new = nodes_a[name], nodes_b[name]
        op = {"from": old.get("op"), "to": new.get("op")} if old.get("op") != new.get("op") else None
        params = _changes(old.get("params") or {}, new.get("params") or {})
        refs_a = [str(r) for r in old.get("inputs") or []]
        refs_b = [str(r) for r in new.get("inputs") or []]
        kept = Counter(refs_a) & Counter(refs_b)
        reordered = _kept_order(refs_a, kept) != _kept_order(refs_b, kept)
        if op or params or reordered:
            changed.append({"id": name, "op": op, "params": params,
                            "inputs": {"from": refs_a, "to": refs_b} if reordered else None})

    def edge_list(edges: Counter[tuple[str, str]]) -> list[dict[str, str]]:
        return [{"source": src, "target": dst} for src, dst in sorted(edges.elements())]

    outputs_a, outputs_b = list(spec_a.get("outputs") or []), list(spec_b.get("outputs") or [])
    return {
        "nodes": {
            "added": [node_entry(nodes_b[n]) for n in nodes_b if n not in nodes_a],
            "removed": [node_entry(nodes_a[n]) for n in nodes_a if n not in nodes_b],
            "changed": changed,
        },
        "edges": {"added": edge_list(edges_b - edges_a), "removed": edge_list(edges_a - edges_b)},
        "inputs": inputs,
        "outputs": {"from": outputs_a, "to": outputs_b} if outputs_a != outputs_b else None,
        "blocks": _blocks_diff(spec_a, spec_b),
    }


def diff_lines(diff: dict[str, Any]) -> list[str]:
    """A `spec_diff` as lines a person reads (the runs compare view and the diff's `lines`).

    "input x.shape: [1, 8, 8] -> [1, 16, 16]", "node act3 removed", "node drop added", "fc2.op:
    Linear -> Bilinear", "fc1.out_features: 64 -> 128", "cat.inputs: [a, b] -> [b, a]", "edge act1
    -> fc2 removed", "edge act1 -> drop added", "outputs: ['y'] -> ['y', 'z']".
    """
    lines = [f"input {i['id']} removed" for i in diff["inputs"]["removed"]]
    lines += [f"input {i['id']} added" for i in diff["inputs"]["added"]]
    for item in diff["inputs"]["changed"]:
        lines += [f"input {item['id']}.{c['name']}: {_short(c['from'])} -> {_short(c['to'])}"
                  for c in item["params"]]
    lines += [f"node {n['id']} removed" for n in diff["nodes"]["removed"]]
    lines += [f"node {n['id']} added" for n in diff["nodes"]["added"]]
    for node in diff["nodes"]["changed"]:
        name = node["id"]
        if node["op"]:
            lines.append(f"{name}.op: {node['op']['from']} -> {node['op']['to']}")
        for change in node["params"]:
            before = "(default)" if change["from"] is None else _short(change["from"])
            after = "(default)" if change["to"] is None else _short(change["to"])
            lines.append(f"{name}.{change['name']}: {before} -> {after}")
        if node.get("inputs"):
            lines.append(f"{name}.inputs: {_short(node['inputs']['from'])} -> {_short(node['inputs']['to'])}")
    lines += [f"edge {e['source']} -> {e['target']} removed" for e in diff["edges"]["removed"]]
    lines += [f"edge {e['source']} -> {e['target']} added" for e in diff["edges"]["added"]]
    if diff["outputs"] is not None:
        lines.append(f"outputs: {_short(diff['outputs']['from'])} -> {_short(diff['outputs']['to'])}")
    blocks = diff.get("blocks") or {}
    lines += [f"block {ref} removed" for ref in blocks.get("removed") or []]
    lines += [f"block {ref} added" for ref in blocks.get("added") or []]
    for block in blocks.get("changed") or []:
        lines += [f"block {block['ref']}: {line}" for line in block["lines"]]
    return lines


def revision_diff(a: Any, b: Any) -> list[str]:
    """What changed from revision (or spec) `a` to `b`, as lines a person reads ([] when the
    graphs are the same; layout and UI never count): `diff_lines(spec_diff(a, b))`."""
    return diff_lines(spec_diff(a, b))


def graph_revision_diff(*, graph: Graph, from_number: int, to_number: int) -> dict[str, Any]:
    """The diff of two revisions of `graph` (any, a sweep's variants too), with its lines.

    Raises NotFound naming `from` or `to` for a number the graph has no revision of.
    """
    found = {r.number: r for r in graph.revisions.filter(number__in=[from_number, to_number])}
    for field, number in (("from", from_number), ("to", to_number)):
        if number not in found:
            raise NotFound("not_found", f"Graph {graph.pk} has no revision {number}.", field=field)
    diff = spec_diff(found[from_number], found[to_number])
    return {"graph": graph.pk, "from": from_number, "to": to_number, **diff, "lines": diff_lines(diff)}
