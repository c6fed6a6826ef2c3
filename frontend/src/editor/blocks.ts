// Blocks on the canvas (spec version 2): a named, versioned subgraph the team keeps in its library.
// An instance is an op node whose op is "Name@version"; the spec carries the definitions it uses
// under `blocks`. Everything here is pure (canvas doc in, canvas doc out); the team library's API
// is blockLibrary.ts, a body edited as a graph of its own blockBody.ts. TODO(gen): once `make gen`
// brings `blocks` into spec.gen.ts, alias these types to it.
import type { GraphSpec, NodeSpec, OpSchema, ParamSchema } from "../api/types";
import { refOf, splitRef } from "./refs";
import { idBase, isPythonIdentifier, nextId } from "./ids";
import { type CanvasDoc, type CanvasEdge, type CanvasNode, type OpNode, NODE_HEIGHT, NODE_WIDTH, edgeId, handleIndex } from "./model";

/** One parameter a block exposes (engine.spec BlockParam). */
export interface BlockParam {
  name: string;
  default: unknown;
  description?: string;
}

/** A block definition as the spec embeds it (engine.spec BlockSpec). */
export interface BlockSpec {
  name: string;
  version: number;
  params: BlockParam[];
  inputs: { id: string }[];
  nodes: NodeSpec[];
  outputs: string[];
  description?: string;
  layout?: Record<string, unknown>;
  ui?: Record<string, unknown>;
}

/** A graph spec that may carry blocks (version 2). */
export type BlockGraphSpec = Omit<GraphSpec, "version" | "blocks"> & { version?: 1 | 2; blocks?: BlockSpec[] };

/** A spec as the API answers it, its block definitions with the engine's defaults filled in. */
export function withBlockDefaults(spec: GraphSpec): BlockGraphSpec {
  const { blocks, ...rest } = spec;
  if (!blocks) return rest as BlockGraphSpec;
  return {
    ...rest,
    blocks: blocks.map((b) => ({
      ...b,
      params: (b.params ?? []).map((p) => ({ ...p })),
      inputs: b.inputs ?? [],
      nodes: b.nodes ?? [],
      outputs: b.outputs ?? [],
    })),
  };
}

/** A value inside a block's node that stands for the instance's value of a block param. */
export interface ParamRef {
  $param: string;
}

export const BLOCK_CATEGORY = "Team blocks";

export function blockRef(block: { name: string; version: number }): string {
  return `${block.name}@${block.version}`;
}

/** `ResBlock@2` -> {name: "ResBlock", version: 2}; null for a catalog op ("@" never appears in one). */
export function parseBlockRef(op: string): { name: string; version: number } | null {
  const match = /^([A-Za-z_][A-Za-z0-9_]*)@([1-9]\d*)$/.exec(op);
  return match ? { name: match[1], version: Number(match[2]) } : null;
}

export function isParamRef(v: unknown): v is ParamRef {
  return !!v && typeof v === "object" && !Array.isArray(v) && typeof (v as ParamRef).$param === "string" && Object.keys(v).length === 1;
}

/** The block definitions the canvas carries (spec `blocks`, kept in the doc's extra keys). */
export function docBlocks(doc: CanvasDoc): BlockSpec[] {
  const raw = doc.extra.blocks;
  return Array.isArray(raw) ? (raw as BlockSpec[]) : [];
}

export function blocksByRef(blocks: BlockSpec[]): Map<string, BlockSpec> {
  return new Map(blocks.map((b) => [blockRef(b), b]));
}

function withBlocks(doc: CanvasDoc, blocks: BlockSpec[]): CanvasDoc {
  const extra = { ...doc.extra };
  if (blocks.length) extra.blocks = blocks;
  else delete extra.blocks;
  return { ...doc, extra };
}

/** Adds definitions the doc does not have yet (by name@version); the ones it has stay as they are. */
export function addBlockDefinitions(doc: CanvasDoc, definitions: BlockSpec[]): CanvasDoc {
  const have = blocksByRef(docBlocks(doc));
  const added = definitions.filter((b) => !have.has(blockRef(b)) && have.set(blockRef(b), b));
  return added.length ? withBlocks(doc, [...docBlocks(doc), ...added]) : doc;
}

/**
 * The blocks a spec uses, directly or through other blocks, in the order the spec lists them:
 * a definition nobody uses any more (its instances deleted or upgraded) is dropped on the way out.
 */
export function usedBlocks(nodes: NodeSpec[], blocks: BlockSpec[]): BlockSpec[] {
  const byRef = blocksByRef(blocks);
  const used = new Set<string>();
  const stack = nodes.map((n) => n.op);
  while (stack.length) {
    const op = stack.pop()!;
    if (used.has(op) || !byRef.has(op)) continue;
    used.add(op);
    stack.push(...byRef.get(op)!.nodes.map((n) => n.op));
  }
  return blocks.filter((b) => used.has(blockRef(b)));
}

/** What a param's form looks like: the catalog param it is bound to inside the block, else guessed from the default. */
function blockParamSchema(block: BlockSpec, param: BlockParam, catalog: Map<string, OpSchema>): ParamSchema {
  for (const node of block.nodes) {
    for (const [name, value] of Object.entries(node.params ?? {})) {
      if (!isParamRef(value) || value.$param !== param.name) continue;
      const inner = catalog.get(node.op)?.params.find((p) => p.name === name);
      if (inner) return { ...inner, name: param.name, default: param.default, required: false, help: param.description || `${node.id}.${name}` };
    }
  }
  const d = param.default;
  const type = typeof d === "boolean" ? "bool" : Number.isInteger(d) ? "int" : typeof d === "number" ? "float" : Array.isArray(d) ? "int_list" : "str";
  return { name: param.name, type, default: d, required: false, help: param.description ?? "" } as ParamSchema;
}

/**
 * A block as the canvas's op catalog sees it: its params, exactly one input per block input, and
 * several output ports when it returns several values. The palette, the parameter form and the wire
 * checks then treat an instance like any op.
 */
export function blockOpSchema(block: BlockSpec, catalog: Map<string, OpSchema>): OpSchema & { block_outputs: number } {
  const n = block.inputs.length;
  return {
    block_outputs: block.outputs.length,
    name: blockRef(block),
    category: BLOCK_CATEGORY,
    help: block.description || `block ${block.name} v${block.version}`,
    arity: { min: n, max: n },
    input_dtypes: [],
    input: "any",
    inferred: [],
    kind: "module",
    torch_name: "",
    keywords: [block.name],
    multi_output: block.outputs.length > 1,
    params: block.params.map((p) => blockParamSchema(block, p, catalog)) as OpSchema["params"],
  };
}

/** The catalog plus one pseudo-op per block definition the doc carries. */
export function opsWithBlocks(catalog: Map<string, OpSchema>, blocks: BlockSpec[]): Map<string, OpSchema> {
  if (!blocks.length) return catalog;
  const all = new Map(catalog);
  for (const b of blocks) all.set(blockRef(b), blockOpSchema(b, catalog));
  return all;
}

export class BlockError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BlockError";
  }
}

/** A param of a selected node offered for exposing: `conv1.out_channels` and its current value. */
export interface ExposableParam {
  node: string;
  param: string;
  value: unknown;
}

/** Every param of the selected op nodes (set or not), in the order of the nodes and their forms. */
export function exposableParams(doc: CanvasDoc, selected: Set<string>, ops: Map<string, OpSchema>): ExposableParam[] {
  const out: ExposableParam[] = [];
  for (const n of doc.nodes) {
    if (n.type !== "op" || !selected.has(n.id)) continue;
    for (const p of ops.get(n.data.op)?.params ?? []) {
      const value = n.data.params?.[p.name];
      if (isParamRef(value)) continue;
      out.push({ node: n.id, param: p.name, value: value === undefined ? p.default : value });
    }
  }
  return out;
}

export interface MakeBlockRequest {
  name: string;
  description?: string;
  /** Block param name -> the (inner node id, param name) pairs it sets. */
  expose: Record<string, [string, string][]>;
}

export interface MadeBlock {
  block: BlockSpec;
  doc: CanvasDoc;
  instance: string;
}

function outHandle(port: number | null, several: boolean): string {
  return several ? `out${port ?? 0}` : "out";
}

/** Op nodes not selected that lie on a path from the selection back into it (collapsing would make a cycle). */
function between(doc: CanvasDoc, inside: Set<string>): string[] {
  const out = new Map<string, string[]>();
  for (const e of doc.edges) out.set(e.source, [...(out.get(e.source) ?? []), e.target]);
  const reach = (starts: string[], next: Map<string, string[]>): Set<string> => {
    const seen = new Set<string>();
    const stack = [...starts];
    while (stack.length) {
      const id = stack.pop()!;
      for (const t of next.get(id) ?? []) if (!inside.has(t) && !seen.has(t)) seen.add(t) && stack.push(t);
    }
    return seen;
  };
  const into = new Map<string, string[]>();
  for (const e of doc.edges) into.set(e.target, [...(into.get(e.target) ?? []), e.source]);
  const down = reach([...inside], out);
  const up = reach([...inside], into);
  return [...down].filter((id) => up.has(id));
}

/**
 * Makes a block (version 1) of the selected op nodes and puts one instance where they were: wires
 * into the selection become the block's inputs (one per distinct source, in the order the nodes read
 * them), wires out of it its outputs; each exposed param takes the current value of its first inner
 * param as its default, and the inner params read `{"$param": name}`. One undo step restores the selection.
 */
export function makeBlock(doc: CanvasDoc, selected: Set<string>, req: MakeBlockRequest, ops: Map<string, OpSchema> = new Map()): MadeBlock {
  if (!isPythonIdentifier(req.name)) throw new BlockError(`“${req.name}” is not a block name: use letters, digits and _ (a Python class name)`);
  if (docBlocks(doc).some((b) => b.name === req.name)) throw new BlockError(`this graph already uses a block named ${req.name}`);
  const picked = doc.nodes.filter((n): n is OpNode => n.type === "op" && selected.has(n.id));
  if (!picked.length) throw new BlockError("select the nodes to make a block of (graph inputs and outputs stay outside)");
  const inside = new Set(picked.map((n) => n.id));
  const loop = between(doc, inside);
  if (loop.length) throw new BlockError(`${loop.join(", ")} ${loop.length > 1 ? "lie" : "lies"} between selected nodes: select ${loop.length > 1 ? "them" : "it"} too`);

  // Inner nodes in data order, so inputs and outputs come out in the order the code reads them.
  const incoming = (id: string) =>
    doc.edges.filter((e) => e.target === id).sort((a, b) => handleIndex(a.targetHandle) - handleIndex(b.targetHandle));
  const order: OpNode[] = [];
  const done = new Set<string>();
  const visit = (n: OpNode) => {
    if (done.has(n.id)) return;
    done.add(n.id);
    for (const e of incoming(n.id)) {
      const src = picked.find((p) => p.id === e.source);
      if (src) visit(src);
    }
    order.push(n);
  };
  picked.forEach(visit);

  const taken = new Set(order.map((n) => n.id));
  const inputRefs: string[] = [];
  for (const n of order) for (const e of incoming(n.id)) if (!inside.has(e.source)) {
    const ref = refOf(e.source, e.sourceHandle);
    if (!inputRefs.includes(ref)) inputRefs.push(ref);
  }
  const inputIds: string[] = [];
  inputRefs.forEach((_, k) => {
    let id = inputRefs.length === 1 ? "x" : `x${k + 1}`;
    while (taken.has(id)) id = `${id}_`;
    taken.add(id);
    inputIds.push(id);
  });

  const leaving = doc.edges.filter((e) => inside.has(e.source) && !inside.has(e.target));
  const outputRefs: string[] = [];
  for (const n of order) {
    const refs = leaving.filter((e) => e.source === n.id).map((e) => refOf(e.source, e.sourceHandle));
    refs.sort((a, b) => (splitRef(a).port ?? 0) - (splitRef(b).port ?? 0));
    for (const r of refs) if (!outputRefs.includes(r)) outputRefs.push(r);
  }
  if (!outputRefs.length) throw new BlockError("nothing outside reads the selection: wire what the block returns to a node or an output first");

  const bound = new Map<string, string>();
  const params: BlockParam[] = [];
  for (const [name, pairs] of Object.entries(req.expose)) {
    if (!pairs.length) continue;
    if (!isPythonIdentifier(name)) throw new BlockError(`“${name}” is not a parameter name: use letters, digits and _`);
    let value: unknown;
    for (const [nodeId, param] of pairs) {
      const node = picked.find((n) => n.id === nodeId);
      if (!node) throw new BlockError(`${nodeId} is not in the selection`);
      const key = `${nodeId}.${param}`;
      if (bound.has(key)) throw new BlockError(`${key} is exposed twice (${bound.get(key)} and ${name})`);
      bound.set(key, name);
      const v = node.data.params?.[param] ?? ops.get(node.data.op)?.params.find((p) => p.name === param)?.default;
      if (value === undefined) value = v;
    }
    if (value === undefined || value === null) throw new BlockError(`${pairs[0].join(".")} has no value: set it before exposing it as ${name}`);
    params.push({ name, default: structuredClone(value), description: pairs.map((p) => p.join(".")).join(", ") });
  }

  const refIn = (e: CanvasEdge) => {
    if (inside.has(e.source)) return refOf(e.source, e.sourceHandle);
    return inputIds[inputRefs.indexOf(refOf(e.source, e.sourceHandle))];
  };
  const nodes: NodeSpec[] = order.map((n) => {
    const spec: NodeSpec = { ...(n.data.extra ?? {}), id: n.id, op: n.data.op } as NodeSpec;
    const p: Record<string, unknown> = { ...(n.data.params ?? {}) };
    for (const [key, name] of bound) {
      const [nodeId, param] = key.split(".");
      if (nodeId === n.id) p[param] = { $param: name } satisfies ParamRef;
    }
    if (n.data.params !== undefined || Object.keys(p).length) spec.params = p;
    spec.inputs = incoming(n.id).map(refIn);
    return spec;
  });

  // The inner layout keeps the drawing, moved to start at the top left; the inputs sit above it.
  const minX = Math.min(...order.map((n) => n.position.x));
  const minY = Math.min(...order.map((n) => n.position.y));
  const layout: Record<string, { x: number; y: number }> = {};
  for (const n of order) layout[n.id] = { x: n.position.x - minX, y: n.position.y - minY + NODE_HEIGHT + 60 };
  inputIds.forEach((id, k) => (layout[id] = { x: k * (NODE_WIDTH + 40), y: 0 }));

  const block: BlockSpec = {
    name: req.name,
    version: 1,
    params,
    inputs: inputIds.map((id) => ({ id })),
    nodes,
    outputs: outputRefs,
    description: req.description ?? "",
    layout,
  };

  const instance = nextId(idBase(req.name), new Set(doc.nodes.map((n) => n.id)));
  const several = outputRefs.length > 1;
  const node: OpNode = {
    id: instance,
    type: "op",
    position: { x: Math.round(order.reduce((s, n) => s + n.position.x, 0) / order.length), y: minY },
    data: { kind: "op", op: blockRef(block), params: Object.fromEntries(params.map((p) => [p.name, structuredClone(p.default)])) },
    selected: true,
  };
  const edges: CanvasEdge[] = doc.edges.filter((e) => !inside.has(e.source) && !inside.has(e.target));
  inputRefs.forEach((ref, k) => {
    const { node: source } = splitRef(ref);
    const handle = doc.edges.find((e) => !inside.has(e.source) && inside.has(e.target) && refOf(e.source, e.sourceHandle) === ref)!.sourceHandle ?? "out";
    edges.push({ id: edgeId(source, instance, k), source, target: instance, sourceHandle: handle, targetHandle: `in${k}` });
  });
  for (const e of leaving) {
    const k = outputRefs.indexOf(refOf(e.source, e.sourceHandle));
    const slot = handleIndex(e.targetHandle);
    edges.push({ id: edgeId(instance, e.target, slot), source: instance, target: e.target, sourceHandle: outHandle(k, several), targetHandle: e.targetHandle ?? "in0" });
  }
  const next: CanvasDoc = {
    ...doc,
    nodes: [...doc.nodes.filter((n) => !inside.has(n.id)).map((n) => (n.selected ? { ...n, selected: false } : n)), node],
    edges,
  };
  return { block, doc: withBlocks(next, [...docBlocks(doc), block]), instance };
}

/** Puts one instance of `block` (its definition and the ones it uses added to the doc) at `position`, selected. */
export function placeInstance(
  doc: CanvasDoc,
  block: BlockSpec,
  dependencies: BlockSpec[],
  position: { x: number; y: number },
): { doc: CanvasDoc; id: string } {
  const id = nextId(idBase(block.name), new Set(doc.nodes.map((n) => n.id)));
  const node: OpNode = {
    id,
    type: "op",
    position: { x: Math.round(position.x), y: Math.round(position.y) },
    data: { kind: "op", op: blockRef(block), params: Object.fromEntries(block.params.map((p) => [p.name, structuredClone(p.default)])) },
    selected: true,
  };
  const placed: CanvasDoc = { ...doc, nodes: [...doc.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), node] };
  return { doc: addBlockDefinitions(placed, [block, ...dependencies]), id };
}

/** The instances of a block name (any version) on the canvas. */
export function instancesOf(doc: CanvasDoc, name: string): OpNode[] {
  return doc.nodes.filter((n): n is OpNode => n.type === "op" && parseBlockRef(n.data.op)?.name === name);
}

/**
 * Pins the given instances (all of `block`'s name when `ids` is null) to `block`'s version: op
 * replaced, the definition (and its dependencies) added. Params the new version no longer has are
 * dropped; wires into inputs or from outputs it no longer has go.
 */
export function upgradeInstances(doc: CanvasDoc, block: BlockSpec, dependencies: BlockSpec[], ids: string[] | null = null): CanvasDoc {
  const targets = new Set((ids ? instancesOf(doc, block.name).filter((n) => ids.includes(n.id)) : instancesOf(doc, block.name)).map((n) => n.id));
  if (!targets.size) return doc;
  const known = new Set(block.params.map((p) => p.name));
  const nodes = doc.nodes.map((n) => {
    if (n.type !== "op" || !targets.has(n.id)) return n;
    const params = Object.fromEntries(Object.entries(n.data.params ?? {}).filter(([k]) => known.has(k)));
    for (const p of block.params) if (!(p.name in params)) params[p.name] = structuredClone(p.default);
    return { ...n, data: { ...n.data, op: blockRef(block), params } } as CanvasNode;
  });
  const several = block.outputs.length > 1;
  const edges = doc.edges.flatMap((e) => {
    if (targets.has(e.target) && handleIndex(e.targetHandle) >= block.inputs.length) return [];
    if (!targets.has(e.source)) return [e];
    const port = /^out(\d+)$/.exec(e.sourceHandle ?? "");
    const k = port ? Number(port[1]) : 0;
    if (k >= block.outputs.length) return [];
    return [{ ...e, sourceHandle: outHandle(k, several) }];
  });
  return addBlockDefinitions({ ...doc, nodes, edges }, [block, ...dependencies]);
}
