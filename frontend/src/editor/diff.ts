// Revision diff: the API's answer, the same diff computed from two specs, and the two graphs
// merged into one marked view (added / removed / changed / same) for the diff canvas.
import type { Node } from "@xyflow/react";
import type { GraphSpec } from "../api/types";
import { specToDoc } from "./convert";
import { refOf } from "./refs";
import { type CanvasNode, isOutputId } from "./model";

export interface ParamChange {
  name: string;
  from: unknown;
  to: unknown;
}
export interface DiffNode {
  id: string;
  op: string;
  params?: Record<string, unknown>;
}
export interface ChangedNode {
  id: string;
  op: { from: string; to: string } | null;
  params: ParamChange[];
}
export interface DiffEdge {
  source: string;
  target: string;
}
/** `GET /api/graphs/<id>/diff/?from=A&to=B`. */
export interface RevisionDiff {
  graph?: number;
  from: number | null;
  to: number | null;
  nodes: { added: DiffNode[]; removed: DiffNode[]; changed: ChangedNode[] };
  edges: { added: DiffEdge[]; removed: DiffEdge[] };
  outputs?: unknown;
  lines: string[];
}

export type DiffStatus = "added" | "removed" | "changed" | "same";

export interface MarkedNodeData extends Record<string, unknown> {
  kind: CanvasNode["type"];
  /** The op (Input / Output for the canvas-only kinds). */
  label: string;
  status: DiffStatus;
  params: Record<string, unknown>;
  opChange: { from: string; to: string } | null;
  changes: ParamChange[];
}
export type MarkedNode = Node<MarkedNodeData, "diff">;
export interface MarkedEdge {
  id: string;
  source: string;
  target: string;
  status: DiffStatus;
}
export interface MarkedView {
  nodes: MarkedNode[];
  edges: MarkedEdge[];
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function edgeKey(e: DiffEdge): string {
  return `${e.source}->${e.target}`;
}

function specEdges(spec: GraphSpec): DiffEdge[] {
  return (spec.nodes ?? []).flatMap((n) => (n.inputs ?? []).map((source) => ({ source, target: n.id })));
}

/** The diff the API answers, computed in the browser from two specs (layout and ui never count). */
export function localDiff(a: GraphSpec, b: GraphSpec, from: number | null = null, to: number | null = null): RevisionDiff {
  const nodesA = new Map((a.nodes ?? []).map((n) => [n.id, n]));
  const nodesB = new Map((b.nodes ?? []).map((n) => [n.id, n]));
  const entry = (n: { id: string; op: string; params?: Record<string, unknown> }): DiffNode => ({ id: n.id, op: n.op, params: { ...(n.params ?? {}) } });
  const added = (b.nodes ?? []).filter((n) => !nodesA.has(n.id)).map(entry);
  const removed = (a.nodes ?? []).filter((n) => !nodesB.has(n.id)).map(entry);
  const changed: ChangedNode[] = [];
  const lines: string[] = [];
  for (const n of removed) lines.push(`node ${n.id} removed`);
  for (const n of added) lines.push(`node ${n.id} added`);
  for (const nb of b.nodes ?? []) {
    const na = nodesA.get(nb.id);
    if (!na) continue;
    const op = na.op !== nb.op ? { from: na.op, to: nb.op } : null;
    const pa = na.params ?? {};
    const pb = nb.params ?? {};
    const params = [...new Set([...Object.keys(pa), ...Object.keys(pb)])]
      .sort()
      .filter((k) => !same(pa[k], pb[k]))
      .map((name) => ({ name, from: pa[name] ?? null, to: pb[name] ?? null }));
    if (op) lines.push(`${nb.id}.op: ${op.from} -> ${op.to}`);
    for (const p of params) lines.push(`${nb.id}.${p.name}: ${formatValue(p.from)} -> ${formatValue(p.to)}`);
    if (op || params.length) changed.push({ id: nb.id, op, params });
  }
  const keysA = new Set(specEdges(a).map(edgeKey));
  const keysB = new Set(specEdges(b).map(edgeKey));
  const edgesRemoved = specEdges(a).filter((e) => !keysB.has(edgeKey(e)));
  const edgesAdded = specEdges(b).filter((e) => !keysA.has(edgeKey(e)));
  for (const e of edgesRemoved) lines.push(`edge ${e.source} -> ${e.target} removed`);
  for (const e of edgesAdded) lines.push(`edge ${e.source} -> ${e.target} added`);
  const outputs = same(a.outputs ?? [], b.outputs ?? []) ? null : { from: a.outputs ?? [], to: b.outputs ?? [] };
  if (outputs) lines.push(`outputs: ${formatValue(outputs.from)} -> ${formatValue(outputs.to)}`);
  return {
    from,
    to,
    nodes: { added, removed, changed },
    edges: { added: edgesAdded, removed: edgesRemoved },
    outputs,
    lines,
  };
}

/** A parameter value as the diff list writes it ("(default)" when unset). */
export function formatValue(v: unknown): string {
  if (v === null || v === undefined) return "(default)";
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** Total number of changes (nodes and edges) in a diff. */
export function changeCount(d: RevisionDiff): number {
  return d.nodes.added.length + d.nodes.removed.length + d.nodes.changed.length + d.edges.added.length + d.edges.removed.length;
}

function labelOf(n: CanvasNode): string {
  if (n.type === "op") return n.data.op;
  return n.type === "input" ? "Input" : "Output";
}

function paramsOf(n: CanvasNode): Record<string, unknown> {
  if (n.type === "op") return { ...(n.data.params ?? {}) };
  if (n.type === "input")
    return {
      shape: n.data.shape,
      ...(n.data.dtype ? { dtype: n.data.dtype } : {}),
    };
  return {};
}

/**
 * One view of both revisions: the `to` graph as drawn, its nodes marked added/changed per `diff`,
 * plus the `from` graph's removed nodes (at their old places) and removed wires, marked removed.
 * Inputs are compared by presence and shape; output nodes are drawn as in `to`.
 */
export function markedView(fromSpec: GraphSpec, toSpec: GraphSpec, diff: RevisionDiff): MarkedView {
  const fromDoc = specToDoc(fromSpec);
  const toDoc = specToDoc(toSpec);
  const added = new Set(diff.nodes.added.map((n) => n.id));
  const changed = new Map(diff.nodes.changed.map((c) => [c.id, c]));
  const fromById = new Map(fromDoc.nodes.map((n) => [n.id, n]));
  const toIds = new Set(toDoc.nodes.map((n) => n.id));

  const nodes: MarkedNode[] = [];
  for (const n of toDoc.nodes) {
    let status: DiffStatus = "same";
    let change: ChangedNode | undefined;
    if (n.type === "input") {
      const old = fromById.get(n.id);
      if (!old || old.type !== "input") status = "added";
      else if (!same(paramsOf(old), paramsOf(n))) {
        status = "changed";
        const pa = paramsOf(old);
        const pb = paramsOf(n);
        change = {
          id: n.id,
          op: null,
          params: Object.keys({ ...pa, ...pb })
            .filter((k) => !same(pa[k], pb[k]))
            .map((name) => ({
              name,
              from: pa[name] ?? null,
              to: pb[name] ?? null,
            })),
        };
      }
    } else if (n.type === "op") {
      if (added.has(n.id)) status = "added";
      else if ((change = changed.get(n.id))) status = "changed";
    }
    nodes.push({
      id: n.id,
      type: "diff",
      position: { ...n.position },
      data: {
        kind: n.type,
        label: labelOf(n),
        status,
        params: paramsOf(n),
        opChange: change?.op ?? null,
        changes: change?.params ?? [],
      },
    });
  }
  for (const n of fromDoc.nodes) {
    if (toIds.has(n.id) || isOutputId(n.id)) continue;
    nodes.push({
      id: n.id,
      type: "diff",
      position: { ...n.position },
      data: {
        kind: n.type,
        label: labelOf(n),
        status: "removed",
        params: paramsOf(n),
        opChange: null,
        changes: [],
      },
    });
  }

  const key = (source: string, handle: string | null | undefined, target: string) => `${refOf(source, handle)}->${target}`;
  const fromKeys = new Set(fromDoc.edges.filter((e) => !isOutputId(e.target)).map((e) => key(e.source, e.sourceHandle, e.target)));
  const toKeys = new Set(toDoc.edges.filter((e) => !isOutputId(e.target)).map((e) => key(e.source, e.sourceHandle, e.target)));
  const edges: MarkedEdge[] = toDoc.edges.map((e) => {
    const k = key(e.source, e.sourceHandle, e.target);
    return {
      id: e.id,
      source: e.source,
      target: e.target,
      status: isOutputId(e.target) || fromKeys.has(k) ? "same" : "added",
    };
  });
  const drawn = new Set(nodes.map((n) => n.id));
  for (const e of fromDoc.edges) {
    if (isOutputId(e.target)) continue;
    const k = key(e.source, e.sourceHandle, e.target);
    if (toKeys.has(k) || !drawn.has(e.source) || !drawn.has(e.target)) continue;
    edges.push({
      id: `removed:${e.id}`,
      source: e.source,
      target: e.target,
      status: "removed",
    });
  }
  return { nodes, edges };
}
