"""The shared document of a graph (Yjs, through pycrdt) and the spec it stands for.

    doc = spec_to_ydoc(spec)          # seed a room from a revision
    spec = ydoc_to_spec(doc)          # what "Save revision" validates and stores
    doc_json(doc)                     # the doc as plain JSON (Y.Doc's toJSON in the browser)

Top-level shared types (docs/subsystems/coediting.md): `meta` (version, extra, blocks), `inputs`
(shape, dtype, x, y, order: the inputs' order is the model's forward signature), `nodes` (op,
params as a Y.Map, x, y), `edges` (source, target, slot: a node's inputs are its edges) and
`outputs` (source, x, y, order), every one a Y.Map keyed by a stable id. A node's
inputs are edges keyed `<source>-><target>:<slot>`, so two people drawing one wire write one key.

Yjs numbers are JavaScript numbers: pycrdt stores an int as a float and reads it back as one, so
the derived spec turns integral floats back into ints (as JSON.stringify writes them).

The derivation reads defensively: the document is written by browsers, so an entry of the wrong
type is skipped, never an exception; the usual validation then names what is wrong by node.
"""

from __future__ import annotations

import math
from typing import Any

from pycrdt import Doc, Map

ROOTS = ("meta", "inputs", "nodes", "edges", "outputs")
OUTPUT_NODES = "output_nodes"  # where the canvas keeps output-node places inside spec.ui
SPEC_KEYS = {"version", "inputs", "nodes", "outputs", "layout", "blocks", "ui"}
INPUT_KEYS = {"id", "shape", "dtype"}
NODE_KEYS = {"id", "op", "params", "inputs"}


def edge_key(source: str, target: str, slot: int) -> str:
    """The key of the edge from `source` (a spec ref: "fc1", "split1:1") into `target`'s slot."""
    return f"{source}->{target}:{slot}"


def ref_node(ref: str) -> str:
    """The node or input id a spec ref names ("split1:1" -> "split1")."""
    head, sep, tail = ref.rpartition(":")
    return head if sep and tail.isdigit() else ref


def plain(value: Any) -> Any:
    """A JSON value read from Yjs, with integral floats as ints (what JSON.stringify writes)."""
    if (
        isinstance(value, float)
        and math.isfinite(value)
        and value.is_integer()
        and abs(value) < 2**53
    ):
        return int(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _roots(doc: Doc) -> dict[str, Map]:
    return {name: doc.get(name, type=Map) for name in ROOTS}


def _position(layout: Any, item_id: str) -> dict[str, float]:
    place = layout.get(item_id) if isinstance(layout, dict) else None
    if isinstance(place, dict):
        x, y = place.get("x"), place.get("y")
        if _is_number(x) and _is_number(y):
            return {"x": x, "y": y}
    return {}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _output_places(spec: dict[str, Any]) -> list[dict[str, Any]] | None:
    """spec.ui.output_nodes when it still describes spec.outputs (as the canvas trusts it), else None."""
    ui = spec.get("ui")
    raw = ui.get(OUTPUT_NODES) if isinstance(ui, dict) else None
    if not isinstance(raw, list):
        return None
    items = [
        o
        for o in raw
        if isinstance(o, dict)
        and _is_number(o.get("x"))
        and _is_number(o.get("y"))
        and (o.get("source") is None or isinstance(o.get("source"), str))
    ]
    sources = [o["source"] for o in items if o.get("source") is not None]
    return items if sources == list(spec.get("outputs") or []) else None


def spec_to_ydoc(spec: dict[str, Any], doc: Doc | None = None) -> Doc:
    """Fill `doc` (a new one when None) with the shared form of `spec`, in one transaction."""
    doc = doc if doc is not None else Doc()
    roots = _roots(doc)
    layout = spec.get("layout") or {}
    with doc.transaction():
        extra = {k: v for k, v in spec.items() if k not in SPEC_KEYS}
        ui = spec.get("ui")
        if isinstance(ui, dict):
            rest = {k: v for k, v in ui.items() if k != OUTPUT_NODES}
            if rest:
                extra["ui"] = rest
        roots["meta"]["version"] = spec.get("version", 1)
        roots["meta"]["extra"] = extra
        if "blocks" in spec:
            roots["meta"]["blocks"] = spec["blocks"]
        for order, item in enumerate(spec.get("inputs") or []):
            fields: dict[str, Any] = {"shape": list(item.get("shape") or []), "order": order}
            if "dtype" in item:
                fields["dtype"] = item["dtype"]
            fields.update(_position(layout, item["id"]))
            rest = {k: v for k, v in item.items() if k not in INPUT_KEYS}
            if rest:
                fields["extra"] = rest
            roots["inputs"][item["id"]] = Map(fields)
        for node in spec.get("nodes") or []:
            fields = {"op": node.get("op", ""), "params": Map(dict(node.get("params") or {}))}
            fields.update(_position(layout, node["id"]))
            rest = {k: v for k, v in node.items() if k not in NODE_KEYS}
            if rest:
                fields["extra"] = rest
            roots["nodes"][node["id"]] = Map(fields)
            for slot, source in enumerate(node.get("inputs") or []):
                roots["edges"][edge_key(source, node["id"], slot)] = Map(
                    {"source": source, "target": node["id"], "slot": slot}
                )
        places = _output_places(spec)
        if places is not None:
            for order, place in enumerate(places):
                roots["outputs"][f"out:{order}"] = Map(
                    {
                        "source": place.get("source"),
                        "x": place["x"],
                        "y": place["y"],
                        "order": order,
                    }
                )
        else:
            for order, source in enumerate(spec.get("outputs") or []):
                roots["outputs"][f"out:{order}"] = Map({"source": source, "order": order})
    return doc


def _entries(root: Map) -> dict[str, dict[str, Any]]:
    """A root's entries that are maps, as {key: {field: value}} (a shared Y.Map inside stays a Map)."""
    found: dict[str, dict[str, Any]] = {}
    for key, value in root.items():
        if isinstance(value, Map):
            found[str(key)] = dict(value.items())
    return found


def _topological(ids: list[str], deps: dict[str, list[str]]) -> list[str]:
    """Nodes so that each comes after those it reads; ties (and a cycle's nodes, last) in id order."""
    index = {node_id: i for i, node_id in enumerate(ids)}
    remaining = {i: len({d for d in deps[i] if d in index and d != i}) for i in ids}
    users: dict[str, list[str]] = {}
    for node_id in ids:
        for dep in {d for d in deps[node_id] if d in index and d != node_id}:
            users.setdefault(dep, []).append(node_id)
    ready = sorted((i for i in ids if remaining[i] == 0), key=index.__getitem__)
    order: list[str] = []
    while ready:
        node_id = ready.pop(0)
        order.append(node_id)
        for user in users.get(node_id, []):
            remaining[user] -= 1
            if remaining[user] == 0:
                ready.append(user)
        ready.sort(key=index.__getitem__)
    placed = set(order)
    return order + [i for i in ids if i not in placed]


def _input_rank(input_id: str, fields: dict[str, Any]) -> tuple[int, float, str]:
    """Inputs by (order, id): the model's forward signature; one without `order` (a document
    stored before inputs had one) comes after those with one, by id."""
    order = fields.get("order")
    return (0, order, input_id) if _is_number(order) else (1, 0, input_id)


def _place(fields: dict[str, Any]) -> dict[str, int] | None:
    x, y = fields.get("x"), fields.get("y")
    if _is_number(x) and _is_number(y):
        return {"x": round(x), "y": round(y)}
    return None


def ydoc_to_spec(doc: Doc) -> dict[str, Any]:
    """The graph spec the document stands for (see the module docstring and the contract)."""
    roots = _roots(doc)
    with doc.transaction():
        meta = dict(roots["meta"].items())
        inputs_raw = _entries(roots["inputs"])
        nodes_raw = _entries(roots["nodes"])
        edges_raw = _entries(roots["edges"])
        outputs_raw = _entries(roots["outputs"])
        params = {
            node_id: {str(k): plain(v) for k, v in f["params"].items()}
            if isinstance(f.get("params"), Map)
            else {}
            for node_id, f in nodes_raw.items()
        }
    extra = plain(meta.get("extra")) if isinstance(meta.get("extra"), dict) else {}
    version = plain(meta.get("version", 1))
    spec: dict[str, Any] = {k: v for k, v in extra.items() if k not in SPEC_KEYS}
    spec["version"] = version
    layout: dict[str, dict[str, int]] = {}

    inputs = []
    for input_id in sorted(inputs_raw, key=lambda i: _input_rank(i, inputs_raw[i])):
        fields = inputs_raw[input_id]
        item: dict[str, Any] = (
            dict(plain(fields["extra"])) if isinstance(fields.get("extra"), dict) else {}
        )
        item.update(
            {
                "id": input_id,
                "shape": plain(fields.get("shape"))
                if isinstance(fields.get("shape"), list)
                else [],
            }
        )
        if "dtype" in fields:
            item["dtype"] = fields["dtype"]
        inputs.append(item)
        if (place := _place(fields)) is not None:
            layout[input_id] = place
    spec["inputs"] = inputs

    known = set(inputs_raw) | set(nodes_raw)
    incoming: dict[str, list[tuple[int, str, str]]] = {}
    for key, edge in edges_raw.items():
        source, target, slot = edge.get("source"), edge.get("target"), edge.get("slot")
        if not isinstance(source, str) or not isinstance(target, str) or not _is_number(slot):
            continue
        if target not in nodes_raw or ref_node(source) not in known:
            continue  # an edge of a deleted node: ignored (any client may delete it)
        incoming.setdefault(target, []).append((slot, key, source))
    ids = sorted(nodes_raw)
    node_inputs = {i: [source for _, _, source in sorted(incoming.get(i, []))] for i in ids}
    nodes = []
    for node_id in _topological(ids, {i: [ref_node(r) for r in node_inputs[i]] for i in ids}):
        fields = nodes_raw[node_id]
        node: dict[str, Any] = (
            dict(plain(fields["extra"])) if isinstance(fields.get("extra"), dict) else {}
        )
        op = fields.get("op")
        node.update({"id": node_id, "op": op if isinstance(op, str) else ""})
        if params[node_id]:
            node["params"] = params[node_id]
        node["inputs"] = node_inputs[node_id]
        nodes.append(node)
        if (place := _place(fields)) is not None:
            layout[node_id] = place
    spec["nodes"] = nodes

    outputs = []
    for key, fields in outputs_raw.items():
        source = fields.get("source")
        if not isinstance(source, str) or ref_node(source) not in known:
            source = None  # no wire, or the wire's node is gone: a dangling output node
        order = fields.get("order") if _is_number(fields.get("order")) else 0
        outputs.append((order, key, source, _place(fields)))
    outputs.sort(key=lambda o: (o[0], o[1]))
    spec["outputs"] = [source for _, _, source, _ in outputs if source is not None]
    if isinstance(meta.get("blocks"), list):
        spec["blocks"] = plain(meta["blocks"])
    spec["layout"] = layout
    ui = dict(extra["ui"]) if isinstance(extra.get("ui"), dict) else {}
    if outputs and all(place is not None for *_, place in outputs):
        ui[OUTPUT_NODES] = [{"source": source, **place} for _, _, source, place in outputs]  # type: ignore[dict-item]
    if ui:
        spec["ui"] = ui
    return spec


def doc_json(doc: Doc) -> dict[str, Any]:
    """The document as plain JSON: each root as Y.Map's toJSON gives it (numbers as JSON writes them)."""
    roots = _roots(doc)
    with doc.transaction():
        return {name: plain(roots[name].to_py() or {}) for name in ROOTS}
