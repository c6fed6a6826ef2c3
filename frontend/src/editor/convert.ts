// Spec <-> canvas. The spec is what the server stores and checks; the canvas is what the user edits.
import type { GraphSpec, InputSpec, NodeSpec, Position } from "../api/types";
import { type BlockGraphSpec, type BlockSpec, usedBlocks } from "./blocks";
import { layoutPositions } from "./layout";
import {
  type CanvasDoc,
  type CanvasEdge,
  type CanvasNode,
  type InputNode,
  type OpNode,
  type OutputNode,
  NODE_HEIGHT,
  NODE_WIDTH,
  OUTPUT_PREFIX,
  edgeId,
  handleIndex,
} from "./model";
import { refOf, sourceHandleOf, splitRef } from "./refs";

/** Where the canvas keeps output-node positions (and dangling output nodes) inside `spec.ui`. */
export const UI_OUTPUT_NODES = "output_nodes";
/** Vertical space between a node and the output node placed under it. */
const OUTPUT_GAP = 40;

interface OutputNodeUi {
  source: string | null;
  x: number;
  y: number;
}

const SPEC_KEYS = new Set(["version", "inputs", "nodes", "outputs", "layout"]);
const INPUT_KEYS = new Set(["id", "shape", "dtype"]);
const NODE_KEYS = new Set(["id", "op", "params", "inputs"]);

function pick(obj: object, known: Set<string>): Record<string, unknown> | undefined {
  const rest: Record<string, unknown> = {};
  let any = false;
  for (const [k, v] of Object.entries(obj)) {
    if (!known.has(k)) {
      rest[k] = v;
      any = true;
    }
  }
  return any ? rest : undefined;
}

function isPosition(v: unknown): v is Position {
  return !!v && typeof v === "object" && typeof (v as Position).x === "number" && typeof (v as Position).y === "number";
}

function outputNodesUi(spec: GraphSpec): OutputNodeUi[] | null {
  const raw = (spec.ui as Record<string, unknown> | undefined)?.[UI_OUTPUT_NODES];
  if (!Array.isArray(raw)) return null;
  const items = raw.filter(
    (o): o is OutputNodeUi =>
      !!o && typeof o === "object" && typeof o.x === "number" && typeof o.y === "number" && (o.source === null || typeof o.source === "string"),
  );
  const sources = items.filter((o) => o.source !== null).map((o) => o.source);
  // Only trust the stored list when it still describes spec.outputs (someone may have edited the JSON).
  const outputs = spec.outputs ?? [];
  if (sources.length !== outputs.length || sources.some((s, i) => s !== outputs[i])) return null;
  return items;
}

/** Turns a spec into canvas nodes and edges; nodes without a layout entry are auto-laid out. */
export function specToDoc(spec: GraphSpec): CanvasDoc {
  const layout = spec.layout ?? {};
  const placed = (id: string): Position => {
    const p = layout[id];
    return isPosition(p) ? { x: p.x, y: p.y } : { x: NaN, y: NaN };
  };
  const nodes: CanvasNode[] = [];
  const edges: CanvasEdge[] = [];
  for (const input of spec.inputs) {
    const node: InputNode = {
      id: input.id,
      type: "input",
      position: placed(input.id),
      data: { kind: "input", shape: [...input.shape], dtype: input.dtype, extra: pick(input, INPUT_KEYS) },
    };
    if (input.dtype === undefined) delete node.data.dtype;
    if (!node.data.extra) delete node.data.extra;
    nodes.push(node);
  }
  for (const spec_node of spec.nodes ?? []) {
    const node: OpNode = {
      id: spec_node.id,
      type: "op",
      position: placed(spec_node.id),
      data: { kind: "op", op: spec_node.op, params: spec_node.params ? { ...spec_node.params } : undefined, extra: pick(spec_node, NODE_KEYS) },
    };
    if (!node.data.params) delete node.data.params;
    if (!node.data.extra) delete node.data.extra;
    nodes.push(node);
    (spec_node.inputs ?? []).forEach((ref, slot) => {
      const source = splitRef(ref).node;
      edges.push({ id: edgeId(source, spec_node.id, slot), source, target: spec_node.id, sourceHandle: sourceHandleOf(ref), targetHandle: `in${slot}` });
    });
  }
  const stored = outputNodesUi(spec);
  const outputs: OutputNodeUi[] = stored ?? (spec.outputs ?? []).map((source) => ({ source, x: NaN, y: NaN }));
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const placedUnder = new Map<string, number>();
  outputs.forEach((o, k) => {
    const id = `${OUTPUT_PREFIX}${k + 1}`;
    let position = { x: o.x, y: o.y };
    // A spec with a layout but no stored output places (every template): put the output node
    // right under the node it reads, instead of laying it out apart from the drawn nodes.
    const src = o.source !== null ? byId.get(splitRef(o.source).node) : undefined;
    if (Number.isNaN(position.x) && src && !Number.isNaN(src.position.x)) {
      const nth = placedUnder.get(src.id) ?? 0;
      placedUnder.set(src.id, nth + 1);
      position = { x: src.position.x + nth * (NODE_WIDTH + OUTPUT_GAP), y: src.position.y + NODE_HEIGHT + OUTPUT_GAP };
    }
    const node: OutputNode = { id, type: "output", position, data: { kind: "output" } };
    nodes.push(node);
    if (o.source !== null) {
      const source = splitRef(o.source).node;
      edges.push({ id: edgeId(source, id, 0), source, target: id, sourceHandle: sourceHandleOf(o.source), targetHandle: "in0" });
    }
  });

  if (nodes.some((n) => Number.isNaN(n.position.x))) {
    const positions = layoutPositions(
      nodes.map((n) => n.id),
      edges,
    );
    for (const n of nodes) if (Number.isNaN(n.position.x)) n.position = positions.get(n.id)!;
  }

  const extra: Record<string, unknown> = pick(spec, SPEC_KEYS) ?? {};
  if (extra.ui && typeof extra.ui === "object") {
    const { [UI_OUTPUT_NODES]: _ignored, ...ui } = extra.ui as Record<string, unknown>;
    if (Object.keys(ui).length) extra.ui = ui;
    else delete extra.ui;
  }
  return { nodes, edges, extra };
}

/** Stable topological order that keeps the given order wherever it already is one. */
export function topoOrder(ids: string[], deps: Map<string, string[]>): string[] {
  const index = new Map(ids.map((id, i) => [id, i]));
  const remaining = new Map<string, number>();
  const users = new Map<string, string[]>();
  for (const id of ids) {
    const ds = (deps.get(id) ?? []).filter((d) => index.has(d) && d !== id);
    remaining.set(id, new Set(ds).size);
    for (const d of new Set(ds)) users.set(d, [...(users.get(d) ?? []), id]);
  }
  const ready = ids.filter((id) => remaining.get(id) === 0);
  const order: string[] = [];
  while (ready.length) {
    ready.sort((a, b) => index.get(a)! - index.get(b)!);
    const id = ready.shift()!;
    order.push(id);
    for (const u of users.get(id) ?? []) {
      const left = remaining.get(u)! - 1;
      remaining.set(u, left);
      if (left === 0) ready.push(u);
    }
  }
  // A cycle leaves nodes behind: keep them (in their order) so the server can name the cycle.
  for (const id of ids) if (!order.includes(id)) order.push(id);
  return order;
}

/** Turns the canvas back into a spec; positions go to `layout`, output-node places to `ui`. */
export function docToSpec(doc: CanvasDoc): GraphSpec {
  const incoming = new Map<string, CanvasEdge[]>();
  for (const e of doc.edges) incoming.set(e.target, [...(incoming.get(e.target) ?? []), e]);
  const sourcesOf = (id: string): string[] =>
    (incoming.get(id) ?? [])
      .slice()
      .sort((a, b) => handleIndex(a.targetHandle) - handleIndex(b.targetHandle))
      .map((e) => refOf(e.source, e.sourceHandle));

  const layout: Record<string, { x: number; y: number }> = {};
  const inputs: InputSpec[] = [];
  const opNodes = new Map<string, NodeSpec>();
  const opOrder: string[] = [];
  const outputsUi: OutputNodeUi[] = [];
  for (const n of doc.nodes) {
    if (n.type === "input") {
      const d = n.data;
      const input: InputSpec = { ...(d.extra ?? {}), id: n.id, shape: [...d.shape] } as InputSpec;
      if (d.dtype !== undefined) input.dtype = d.dtype as InputSpec["dtype"];
      inputs.push(input);
      layout[n.id] = { x: n.position.x, y: n.position.y };
    } else if (n.type === "op") {
      const d = n.data;
      const node: NodeSpec = { ...(d.extra ?? {}), id: n.id, op: d.op } as NodeSpec;
      if (d.params !== undefined) node.params = { ...d.params };
      node.inputs = sourcesOf(n.id);
      opNodes.set(n.id, node);
      opOrder.push(n.id);
      layout[n.id] = { x: n.position.x, y: n.position.y };
    } else {
      const src = sourcesOf(n.id)[0] ?? null;
      outputsUi.push({ source: src, x: n.position.x, y: n.position.y });
    }
  }
  const order = topoOrder(
    opOrder,
    new Map(opOrder.map((id) => [id, (opNodes.get(id)!.inputs ?? []).map((ref) => splitRef(ref).node)])),
  );
  const nodes = order.map((id) => opNodes.get(id)!);
  // Only the block definitions still in use travel (a deleted or upgraded instance leaves its own behind);
  // a spec with blocks is version 2, one without stays version 1 and hashes as before.
  const { blocks: carried, ...extra } = doc.extra as { blocks?: BlockSpec[] };
  const blocks = Array.isArray(carried) ? usedBlocks(nodes, carried) : [];
  const spec: BlockGraphSpec = {
    ...extra,
    version: blocks.length ? 2 : 1,
    inputs,
    ...(blocks.length ? { blocks } : {}),
    nodes,
    outputs: outputsUi.filter((o) => o.source !== null).map((o) => o.source as string),
    layout,
  };
  if (outputsUi.length) spec.ui = { ...((doc.extra.ui as object) ?? {}), [UI_OUTPUT_NODES]: outputsUi };
  return spec as GraphSpec;
}

/** The spec without canvas-only keys: what the model depends on. */
export function modelPart(spec: GraphSpec): GraphSpec {
  const { layout: _layout, ui: _ui, ...rest } = spec;
  return rest as GraphSpec;
}

/** JSON with sorted keys, to compare specs by content. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

export const EMPTY_SPEC: GraphSpec = {
  version: 1,
  inputs: [{ id: "x", shape: [1, 8, 8], dtype: "float32" }],
  nodes: [],
  outputs: [],
  layout: { x: { x: 200, y: 40 } },
  ui: { [UI_OUTPUT_NODES]: [{ source: null, x: 200, y: 520 }] },
};

/** The spec with the engine's defaults filled in, so "unsaved?" compares content, not spelling. */
export function normalizeSpec(spec: GraphSpec): string {
  const blocks = ((spec as BlockGraphSpec).blocks ?? []).map((b) => ({
    description: "",
    layout: {},
    ui: {},
    ...b,
    params: b.params.map((p) => ({ description: "", ...p })),
    nodes: b.nodes.map((n) => ({ params: {}, inputs: [], ...n })),
  }));
  return canonicalJson({
    ...spec,
    version: blocks.length ? 2 : 1,
    blocks,
    inputs: spec.inputs.map((i) => ({ dtype: "float32", ...i })),
    nodes: (spec.nodes ?? []).map((n) => ({ params: {}, inputs: [], ...n })),
    outputs: spec.outputs ?? [],
    layout: spec.layout ?? {},
    ui: spec.ui ?? {},
  });
}
