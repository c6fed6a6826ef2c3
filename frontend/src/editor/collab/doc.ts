// The shared document of a graph (a Y.Doc) and the graph spec, both ways, as docs/subsystems/coediting.md
// lays it out: `meta`, `inputs`, `nodes` (params a Y.Map of their own), `edges` keyed
// `<source>-><target>:<slot>` and `outputs` keyed `out:…`. Writes are fine-grained (a param, a
// position, one entry deleted): a whole node map is never set again for an id that exists, so a
// node someone else deleted is never brought back. webapp/graphs/collab/doc.py is the same mapping
// in Python; tests/data/collab_specs.json keeps the two in agreement.
import * as Y from "yjs";
import type { GraphSpec, InputSpec, NodeSpec } from "../../api/types";
import { UI_OUTPUT_NODES, canonicalJson, topoOrder } from "../convert";
import { splitRef } from "../refs";

type Json = unknown;
type JsonObject = Record<string, Json>;

/** One entry of `inputs`, `nodes`, `edges` or `outputs` as `doc.toJSON()` shows it. */
// x and y are absent where the spec has no layout entry (the canvas then lays the node out).
export interface InputEntry {
  shape: number[];
  /** The input's place in the spec's `inputs` (the model's forward signature); absent in documents stored before it. */
  order?: number;
  dtype?: string;
  x?: number;
  y?: number;
  extra?: JsonObject;
}
export interface NodeEntry {
  op: string;
  params: JsonObject;
  x?: number;
  y?: number;
  extra?: JsonObject;
}
export interface EdgeEntry {
  source: string;
  target: string;
  slot: number;
}
export interface OutputEntry {
  source: string | null;
  x?: number;
  y?: number;
  order: number;
}

/** The whole document as plain JSON (`doc.toJSON()`): what the shared fixture compares. */
export interface DocJson {
  meta: { version?: number; extra?: JsonObject; blocks?: Json[] };
  inputs: Record<string, InputEntry>;
  nodes: Record<string, NodeEntry>;
  edges: Record<string, EdgeEntry>;
  outputs: Record<string, OutputEntry>;
}

export const TOP_LEVEL = ["meta", "inputs", "nodes", "edges", "outputs"] as const;

const SPEC_KEYS = new Set(["version", "inputs", "nodes", "outputs", "layout", "blocks", "ui"]);
const INPUT_KEYS = new Set(["id", "shape", "dtype"]);
const NODE_KEYS = new Set(["id", "op", "params", "inputs"]);

export function edgeKey(source: string, target: string, slot: number): string {
  return `${source}->${target}:${slot}`;
}

function rest(obj: object, known: Set<string>): JsonObject | undefined {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(obj)) if (!known.has(k)) out[k] = v;
  return Object.keys(out).length ? out : undefined;
}

function isObject(v: unknown): v is JsonObject {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

function same(a: Json, b: Json): boolean {
  return a === b || canonicalJson(a) === canonicalJson(b);
}

function isNum(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v);
}

function num(v: unknown): number {
  return isNum(v) ? v : 0;
}

/** {x, y} rounded, or null when the entry has no place. */
function placeOf(e: { x?: unknown; y?: unknown } | undefined): { x: number; y: number } | null {
  return e && isNum(e.x) && isNum(e.y) ? { x: Math.round(e.x), y: Math.round(e.y) } : null;
}

/** The output entries in the order the spec lists them: (order, key). */
export function sortedOutputs(outputs: Record<string, OutputEntry>): [string, OutputEntry][] {
  return Object.entries(outputs).sort(([ka, a], [kb, b]) => num(a.order) - num(b.order) || (ka < kb ? -1 : ka > kb ? 1 : 0));
}

/** The input ids in the order the spec lists them: (order, id); one without `order` after those with one, by id. */
export function sortedInputIds(inputs: Record<string, InputEntry>): string[] {
  const rank = (e: InputEntry | undefined) => (e && isNum(e.order) ? 0 : 1);
  return Object.keys(inputs).sort((a, b) => {
    const ea = inputs[a];
    const eb = inputs[b];
    return rank(ea) - rank(eb) || (rank(ea) === 0 ? ea.order! - eb.order! : 0) || (a < b ? -1 : a > b ? 1 : 0);
  });
}

/**
 * Each input's `order` as the doc has it, in spec order; one without (an older document) gets the
 * next number after those before it, so writing these back keeps the order the doc derives now.
 */
export function inputOrders(inputs: Record<string, InputEntry>): Map<string, number> {
  const orders = new Map<string, number>();
  let last = -1;
  for (const id of sortedInputIds(inputs)) {
    const o = inputs[id].order;
    const order = isNum(o) ? o : last + 1;
    orders.set(id, order);
    last = Math.max(last, order);
  }
  return orders;
}

/** Per target node, its edges sorted by (slot, key) — the node's `inputs` in that order. */
export function edgesByTarget(json: Pick<DocJson, "edges" | "nodes" | "inputs">): Map<string, [string, EdgeEntry][]> {
  const exists = (id: string) => id in json.nodes || id in json.inputs;
  const by = new Map<string, [string, EdgeEntry][]>();
  for (const [key, e] of Object.entries(json.edges)) {
    if (!e || typeof e.source !== "string" || typeof e.target !== "string" || !isNum(e.slot)) continue;
    if (!(e.target in json.nodes) || !exists(splitRef(e.source).node)) continue;
    by.set(e.target, [...(by.get(e.target) ?? []), [key, e]]);
  }
  for (const list of by.values()) list.sort(([ka, a], [kb, b]) => num(a.slot) - num(b.slot) || (ka < kb ? -1 : ka > kb ? 1 : 0));
  return by;
}

export interface FlatOptions {
  /** The key of the k-th output (spec order, null sources included); default `out:<k>`. */
  outputKey?: (k: number) => string;
  /** The key of the wire reading `ref` into `target`'s slot; default `<ref>-><target>:<slot>`. */
  edgeKey?: (ref: string, target: string, slot: number) => string;
  /** The `order` of the k-th input (spec order); default k. */
  inputOrder?: (id: string, k: number) => number;
}

/** The document a spec makes, as plain JSON. */
export function specToJson(spec: GraphSpec, options: FlatOptions = {}): DocJson {
  const layout = (spec.layout ?? {}) as Record<string, { x?: unknown; y?: unknown } | undefined>;
  const at = (id: string) => {
    const p = layout[id];
    return p && isNum(p.x) && isNum(p.y) ? { x: p.x, y: p.y } : {};
  };
  const outputKey = options.outputKey ?? ((k: number) => `out:${k}`);
  const keyOf = options.edgeKey ?? edgeKey;
  const orderOf = options.inputOrder ?? ((_id: string, k: number) => k);

  const meta: DocJson["meta"] = { version: spec.version ?? 1 };
  const extra: JsonObject = rest(spec, SPEC_KEYS) ?? {};
  const ui = spec.ui as JsonObject | undefined;
  if (ui && typeof ui === "object") {
    const { [UI_OUTPUT_NODES]: _own, ...uiRest } = ui;
    if (Object.keys(uiRest).length) extra.ui = uiRest;
  }
  meta.extra = extra;
  const blocks = (spec as { blocks?: Json[] }).blocks;
  if (Array.isArray(blocks)) meta.blocks = blocks;

  const inputs: Record<string, InputEntry> = {};
  (spec.inputs ?? []).forEach((input, k) => {
    const entry: InputEntry = { shape: [...input.shape], order: orderOf(input.id, k), ...at(input.id) };
    if (input.dtype !== undefined) entry.dtype = input.dtype;
    const more = rest(input, INPUT_KEYS);
    if (more) entry.extra = more;
    inputs[input.id] = entry;
  });
  const nodes: Record<string, NodeEntry> = {};
  const edges: Record<string, EdgeEntry> = {};
  for (const node of spec.nodes ?? []) {
    const entry: NodeEntry = { op: node.op ?? "", params: { ...(node.params ?? {}) }, ...at(node.id) };
    const more = rest(node, NODE_KEYS);
    if (more) entry.extra = more;
    nodes[node.id] = entry;
    (node.inputs ?? []).forEach((ref, slot) => {
      edges[keyOf(ref, node.id, slot)] = { source: ref, target: node.id, slot };
    });
  }
  const outputs: Record<string, OutputEntry> = {};
  const raw = ui?.[UI_OUTPUT_NODES];
  const stored = Array.isArray(raw)
    ? (raw as { source?: unknown; x?: unknown; y?: unknown }[]).filter(
        (o) => !!o && typeof o === "object" && isNum(o.x) && isNum(o.y) && (o.source === null || o.source === undefined || typeof o.source === "string"),
      )
    : null;
  const sources = spec.outputs ?? [];
  const storedOk = stored !== null && canonicalJson(stored.filter((o) => o.source !== null && o.source !== undefined).map((o) => o.source)) === canonicalJson(sources);
  const list: { source: string | null; x?: number; y?: number }[] = storedOk
    ? (stored as { source: string | null; x: number; y: number }[]).map((o) => ({ source: o.source ?? null, x: o.x, y: o.y }))
    : sources.map((source) => ({ source }));
  list.forEach((o, k) => {
    outputs[outputKey(k)] = o.x === undefined ? { source: o.source, order: k } : { source: o.source, x: o.x, y: o.y, order: k };
  });
  return { meta, inputs, nodes, edges, outputs };
}

/** The spec a document (as JSON) stands for. */
export function jsonToSpec(json: DocJson): GraphSpec {
  const meta = json.meta ?? {};
  const { ui: uiExtra, ...extra } = (isObject(meta.extra) ? meta.extra : {}) as JsonObject;
  for (const k of SPEC_KEYS) delete extra[k];
  const layout: Record<string, { x: number; y: number }> = {};
  const inputs: InputSpec[] = [];
  for (const id of sortedInputIds(json.inputs)) {
    const e = json.inputs[id];
    const input = { ...(isObject(e.extra) ? e.extra : {}), id, shape: Array.isArray(e.shape) ? [...e.shape] : [] } as InputSpec;
    if (e.dtype !== undefined) input.dtype = e.dtype as InputSpec["dtype"];
    inputs.push(input);
    const place = placeOf(e);
    if (place) layout[id] = place;
  }
  const wires = edgesByTarget(json);
  const specNodes = new Map<string, NodeSpec>();
  for (const id of Object.keys(json.nodes)) {
    const e = json.nodes[id];
    const node = { ...(isObject(e.extra) ? e.extra : {}), id, op: typeof e.op === "string" ? e.op : "" } as NodeSpec;
    if (isObject(e.params) && Object.keys(e.params).length) node.params = { ...e.params };
    node.inputs = (wires.get(id) ?? []).map(([, w]) => w.source);
    specNodes.set(id, node);
    const place = placeOf(e);
    if (place) layout[id] = place;
  }
  const ids = [...specNodes.keys()].sort();
  const order = topoOrder(ids, new Map(ids.map((id) => [id, (specNodes.get(id)!.inputs ?? []).map((ref) => splitRef(ref).node)])));
  const known = (ref: unknown) => typeof ref === "string" && (splitRef(ref).node in json.nodes || splitRef(ref).node in json.inputs);
  // An output whose wire's node is gone is a dangling output node.
  const outs = sortedOutputs(json.outputs).map(([k, o]) => [k, { ...o, source: known(o.source) ? o.source : null }] as [string, OutputEntry]);
  const spec: JsonObject = {
    ...extra,
    version: meta.version ?? 1,
    inputs,
    ...(Array.isArray(meta.blocks) ? { blocks: meta.blocks } : {}),
    nodes: order.map((id) => specNodes.get(id)!),
    outputs: outs.filter(([, o]) => o.source !== null).map(([, o]) => o.source),
    layout,
  };
  const ui: JsonObject = { ...(isObject(uiExtra) ? uiExtra : {}) };
  if (outs.length && outs.every(([, o]) => placeOf(o))) ui[UI_OUTPUT_NODES] = outs.map(([, o]) => ({ source: o.source, ...placeOf(o)! }));
  if (Object.keys(ui).length) spec.ui = ui;
  return spec as unknown as GraphSpec;
}

/** The document's content as plain JSON (missing top-level types read as empty). */
export function docJson(doc: Y.Doc): DocJson {
  return {
    meta: doc.getMap("meta").toJSON(),
    inputs: doc.getMap("inputs").toJSON(),
    nodes: doc.getMap("nodes").toJSON(),
    edges: doc.getMap("edges").toJSON(),
    outputs: doc.getMap("outputs").toJSON(),
  } as DocJson;
}

export function ydocToSpec(doc: Y.Doc): GraphSpec {
  return jsonToSpec(docJson(doc));
}

const EMPTY_JSON: DocJson = { meta: {}, inputs: {}, nodes: {}, edges: {}, outputs: {} };

/** Fills an empty doc with a spec (what the server does when it seeds a room; tests use it too). */
export function specToYdoc(spec: GraphSpec, doc: Y.Doc = new Y.Doc(), origin: unknown = null): Y.Doc {
  applyJsonDiff(doc, EMPTY_JSON, specToJson(spec), origin);
  return doc;
}

/**
 * Brings the doc to `spec` with the fewest writes: outputs are matched by their order, a node's
 * wires are only rewritten when its inputs changed. Used for whole-spec changes (a revision restored).
 */
export function applySpecToYdoc(doc: Y.Doc, spec: GraphSpec, origin: unknown, tag = doc.clientID.toString(36)): void {
  const current = docJson(doc);
  const derived = jsonToSpec(current);
  const keys = sortedOutputs(current.outputs).map(([k]) => k);
  const taken = new Set(Object.keys(current.outputs));
  let fresh = 0;
  const outputKey = (k: number): string => {
    if (k < keys.length) return keys[k];
    let key: string;
    do key = `out:${++fresh}_${tag}`;
    while (taken.has(key));
    taken.add(key);
    return key;
  };
  const before = new Map((derived.nodes ?? []).map((n) => [n.id, canonicalJson(n.inputs ?? [])]));
  const wires = edgesByTarget(current);
  const next = specToJson(spec, { outputKey });
  // A node whose inputs did not change keeps the wires it has (their keys and slots as stored).
  for (const node of spec.nodes ?? []) {
    if (before.get(node.id) !== canonicalJson(node.inputs ?? [])) continue;
    for (const [k, e] of Object.entries(next.edges)) if (e.target === node.id) delete next.edges[k];
    for (const [k, e] of wires.get(node.id) ?? []) next.edges[k] = e;
  }
  applyJsonDiff(doc, current, next, origin);
}

function setFields(map: Y.Map<unknown>, prev: JsonObject | undefined, next: JsonObject, skip: Set<string> = new Set()): void {
  for (const [k, v] of Object.entries(next)) {
    if (skip.has(k)) continue;
    if (v === undefined) continue;
    if (!prev || !same(prev[k], v) || !map.has(k)) map.set(k, v);
  }
  for (const k of Object.keys(prev ?? {})) if (!skip.has(k) && !(k in next) && map.has(k)) map.delete(k);
}

function newMap(entries: JsonObject, skip: Set<string> = new Set()): Y.Map<unknown> {
  const m = new Y.Map<unknown>();
  for (const [k, v] of Object.entries(entries)) if (!skip.has(k) && v !== undefined) m.set(k, v);
  return m;
}

const PARAMS = new Set(["params"]);

/**
 * Writes the difference between two states of the content (`prev` -> `next`) into the doc, one
 * field at a time, in one transaction with `origin`. Entries the doc no longer has (someone else
 * deleted them) are left deleted; a wire into a node that is gone is not written.
 */
export function applyJsonDiff(doc: Y.Doc, prev: DocJson, next: DocJson, origin: unknown): void {
  const meta = doc.getMap("meta");
  const inputs = doc.getMap<Y.Map<unknown>>("inputs");
  const nodes = doc.getMap<Y.Map<unknown>>("nodes");
  const edges = doc.getMap<Y.Map<unknown>>("edges");
  const outputs = doc.getMap<Y.Map<unknown>>("outputs");
  doc.transact(() => {
    setFields(meta as Y.Map<unknown>, prev.meta as JsonObject, next.meta as JsonObject);

    const entries = (ymap: Y.Map<Y.Map<unknown>>, a: Record<string, JsonObject>, b: Record<string, JsonObject>, onDelete?: (id: string) => void, canAdd?: (e: JsonObject) => boolean) => {
      for (const id of Object.keys(a)) if (!(id in b) && ymap.has(id)) {
        ymap.delete(id);
        onDelete?.(id);
      }
      for (const [id, entry] of Object.entries(b)) {
        const existing = ymap.get(id);
        if (existing) setFields(existing, a[id], entry, ymap === nodes ? PARAMS : undefined);
        else if (!(id in a) && (!canAdd || canAdd(entry))) ymap.set(id, newMap(entry, ymap === nodes ? PARAMS : undefined));
        // In `a` but not in the doc: someone deleted it meanwhile, and it stays deleted.
      }
    };
    const dropWires = (id: string) => {
      for (const [k, e] of edges.entries()) {
        const target = e.get("target");
        const source = e.get("source");
        if (target === id || (typeof source === "string" && splitRef(source).node === id)) edges.delete(k);
      }
    };
    entries(inputs, prev.inputs as never, next.inputs as never, dropWires);
    entries(nodes, prev.nodes as never, next.nodes as never, dropWires);
    // Params, key by key (a new node got its params below as well).
    for (const [id, entry] of Object.entries(next.nodes)) {
      const node = nodes.get(id);
      if (!node) continue;
      let params = node.get("params") as Y.Map<unknown> | undefined;
      if (!(params instanceof Y.Map)) {
        params = new Y.Map();
        node.set("params", params);
      }
      setFields(params, prev.nodes[id]?.params, entry.params ?? {});
    }
    const present = (ref: string) => nodes.has(splitRef(ref).node) || inputs.has(splitRef(ref).node);
    entries(edges, prev.edges as never, next.edges as never, undefined, (e) => nodes.has(e.target as string) && present(e.source as string));
    entries(outputs, prev.outputs as never, next.outputs as never);
  }, origin);
}
