"""Reads of the graphs app that other apps call: a graph's latest revision, what changed between two."""

from __future__ import annotations

import json
from typing import Any

from django.db.models import Max, Q, QuerySet

from .models import Graph, GraphRevision

# The revisions people saved: a sweep's variants (origin set) are never a graph's latest.
SAVED = Q(origin="")


def revision_latest(*, graph: Graph) -> GraphRevision | None:
    """The newest revision someone saved (a sweep's architecture variants skipped)."""
    return graph.revisions.filter(SAVED).select_related("created_by").order_by("-number").first()


def graphs_with_latest_number(queryset: QuerySet[Graph]) -> QuerySet[Graph]:
    """`latest_number` on each graph: the number of `revision_latest`."""
    return queryset.annotate(latest_number=Max("revisions__number", filter=Q(revisions__origin="")))


def _spec_of(revision_or_spec: Any) -> dict[str, Any]:
    spec = getattr(revision_or_spec, "spec", revision_or_spec)
    return spec if isinstance(spec, dict) else {}


def _short(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(", ", ": ")) if not isinstance(value, str) else value


def revision_diff(a: Any, b: Any) -> list[str]:
    """What changed from revision (or spec) `a` to `b`, as lines a person reads.

    "fc1.out_features: 64 -> 128", "node drop added", "node act3 removed", "fc2.op: Linear ->
    Bilinear", "edge act1 -> drop added", "edge act1 -> fc2 removed", "input x.shape: [1, 8, 8] ->
    [1, 16, 16]", "outputs: ['y'] -> ['y', 'z']". Layout and UI never count. [] when the graphs
    are the same.
    """
    spec_a, spec_b = _spec_of(a), _spec_of(b)
    lines: list[str] = []
    inputs_a = {i.get("id"): i for i in spec_a.get("inputs") or [] if isinstance(i, dict)}
    inputs_b = {i.get("id"): i for i in spec_b.get("inputs") or [] if isinstance(i, dict)}
    for name in inputs_a.keys() - inputs_b.keys():
        lines.append(f"input {name} removed")
    for name in inputs_b.keys() - inputs_a.keys():
        lines.append(f"input {name} added")
    for name in sorted(inputs_a.keys() & inputs_b.keys(), key=str):
        for field in ("shape", "dtype"):
            if inputs_a[name].get(field) != inputs_b[name].get(field):
                lines.append(f"input {name}.{field}: {_short(inputs_a[name].get(field))} -> "
                             f"{_short(inputs_b[name].get(field))}")
    nodes_a = {n.get("id"): n for n in spec_a.get("nodes") or [] if isinstance(n, dict)}
    nodes_b = {n.get("id"): n for n in spec_b.get("nodes") or [] if isinstance(n, dict)}
    for name in [n for n in nodes_a if n not in nodes_b]:
        lines.append(f"node {name} removed")
    for name in [n for n in nodes_b if n not in nodes_a]:
        lines.append(f"node {name} added")
    for name in [n for n in nodes_b if n in nodes_a]:
        old, new = nodes_a[name], nodes_b[name]
        if old.get("op") != new.get("op"):
            lines.append(f"{name}.op: {old.get('op')} -> {new.get('op')}")
        params_a, params_b = old.get("params") or {}, new.get("params") or {}
        for param in sorted(params_a.keys() | params_b.keys()):
            if params_a.get(param) != params_b.get(param):
                before = _short(params_a[param]) if param in params_a else "(default)"
                after = _short(params_b[param]) if param in params_b else "(default)"
                lines.append(f"{name}.{param}: {before} -> {after}")
    edges_a = {(str(src), str(n)) for n, node in nodes_a.items() for src in node.get("inputs") or []}
    edges_b = {(str(src), str(n)) for n, node in nodes_b.items() for src in node.get("inputs") or []}
    for src, dst in sorted(edges_a - edges_b):
        lines.append(f"edge {src} -> {dst} removed")
    for src, dst in sorted(edges_b - edges_a):
        lines.append(f"edge {src} -> {dst} added")
    if list(spec_a.get("outputs") or []) != list(spec_b.get("outputs") or []):
        lines.append(f"outputs: {_short(spec_a.get('outputs') or [])} -> {_short(spec_b.get('outputs') or [])}")
    return lines
