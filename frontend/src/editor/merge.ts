// Three-way merge of graph specs: the revision both sides started from (base), the teammate's newer
// revision (theirs) and the canvas (mine). Every input, node op, node parameter, node wiring, output
// list and block is one key; a key only one side changed takes that side's value, a key both changed
// to different values is a conflict. Layout and ui are canvas-only: mine wins, theirs fills the rest.
import type { GraphSpec, InputSpec, NodeSpec } from "../api/types";

/** One key both sides changed differently (`path` as a person reads it: "conv2d_1.out_channels"). */
export interface MergeConflict {
  path: string;
  base: unknown;
  theirs: unknown;
  mine: unknown;
}

/** One change of theirs that saving the canvas as it is would undo. */
export interface UndoneChange {
  path: string;
  base: unknown;
  theirs: unknown;
  mine: unknown;
}

export interface MergeResult {
  /** The merged spec; null when there are conflicts. */
  spec: GraphSpec | null;
  conflicts: MergeConflict[];
}

type Flat = Map<string, string>;
const SEP = "\u0000";

function key(...parts: string[]): string {
  return parts.join(SEP);
}

/** The person's name of a key: "fc1.out_features", "fc1 (op)", "fc1 (inputs)", "input x", "outputs". */
export function pathText(k: string): string {
  const [kind, id, field, name] = k.split(SEP);
  if (kind === "input") return `input ${id}`;
  if (kind === "block") return `block ${id}`;
  if (kind === "outputs" || kind === "version") return kind;
  if (field === "param") return `${id}.${name}`;
  return `${id} (${field})`;
}

function flatten(spec: GraphSpec): Flat {
  const flat: Flat = new Map();
  const put = (k: string, v: unknown) => {
    if (v !== undefined) flat.set(k, JSON.stringify(v));
  };
  put(key("version"), spec.version);
  for (const inp of spec.inputs ?? []) put(key("input", inp.id), inp);
  for (const n of spec.nodes ?? []) {
    put(key("node", n.id, "op"), n.op);
    put(key("node", n.id, "inputs"), n.inputs ?? []);
    for (const [name, v] of Object.entries(n.params ?? {})) put(key("node", n.id, "param", name), v);
  }
  put(key("outputs"), spec.outputs);
  for (const b of spec.blocks ?? []) put(key("block", `${b.name}@${b.version}`), b);
  return flat;
}

function parsed(v: string | undefined): unknown {
  return v === undefined ? undefined : JSON.parse(v);
}

/** Nodes in an order where every node comes after the nodes it reads (stable otherwise). */
function topoOrder(nodes: NodeSpec[]): NodeSpec[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const done = new Set<string>();
  const out: NodeSpec[] = [];
  const visit = (n: NodeSpec, path: Set<string>) => {
    if (done.has(n.id) || path.has(n.id)) return;
    path.add(n.id);
    for (const ref of n.inputs ?? []) {
      const dep = byId.get(String(ref).split(":")[0]);
      if (dep) visit(dep, path);
    }
    done.add(n.id);
    out.push(n);
  };
  for (const n of nodes) visit(n, new Set());
  return out;
}

function unflatten(flat: Flat, order: string[], theirs: GraphSpec, mine: GraphSpec): GraphSpec {
  const inputs: InputSpec[] = [];
  const nodes = new Map<string, NodeSpec>();
  const blocks: NonNullable<GraphSpec["blocks"]> = [];
  let outputs: GraphSpec["outputs"];
  let version: GraphSpec["version"];
  for (const [k, v] of flat) {
    const [kind, id, field, name] = k.split(SEP);
    const value = JSON.parse(v);
    if (kind === "version") version = value;
    else if (kind === "outputs") outputs = value;
    else if (kind === "input") inputs.push(value);
    else if (kind === "block") blocks.push(value);
    else if (kind === "node") {
      const n = nodes.get(id) ?? ({ id, op: "" } as NodeSpec);
      if (field === "op") n.op = value;
      else if (field === "inputs") n.inputs = value;
      else if (field === "param") n.params = { ...(n.params ?? {}), [name]: value };
      nodes.set(id, n);
    }
  }
  const rank = new Map(order.map((id, i) => [id, i]));
  const sorted = [...nodes.values()].sort((a, b) => (rank.get(a.id) ?? 0) - (rank.get(b.id) ?? 0));
  const inputRank = new Map([...(theirs.inputs ?? []), ...(mine.inputs ?? [])].map((inp, i) => [inp.id, i]));
  inputs.sort((a, b) => (inputRank.get(a.id) ?? 0) - (inputRank.get(b.id) ?? 0));
  const spec: GraphSpec = { inputs, nodes: topoOrder(sorted) };
  if (version !== undefined) spec.version = version;
  if (outputs !== undefined) spec.outputs = outputs;
  if (blocks.length) spec.blocks = blocks;
  const layout = { ...(theirs.layout ?? {}), ...(mine.layout ?? {}) };
  if (Object.keys(layout).length) spec.layout = layout as GraphSpec["layout"];
  const ui = { ...(theirs.ui ?? {}), ...(mine.ui ?? {}) };
  if (Object.keys(ui).length) spec.ui = ui as GraphSpec["ui"];
  return spec;
}

/** Node ids a wire refers to ("fc1", "split:0" → "split"). */
function refTarget(ref: unknown): string {
  return String(ref).split(":")[0];
}

/** Mine's changes on top of theirs; conflicts where both changed one key differently. */
export function mergeSpecs(base: GraphSpec, theirs: GraphSpec, mine: GraphSpec): MergeResult {
  const b = flatten(base);
  const t = flatten(theirs);
  const m = flatten(mine);
  const merged: Flat = new Map();
  const conflicts: MergeConflict[] = [];
  for (const k of new Set([...b.keys(), ...t.keys(), ...m.keys()])) {
    const [bv, tv, mv] = [b.get(k), t.get(k), m.get(k)];
    let v: string | undefined;
    if (tv === mv || mv === bv) v = tv;
    else if (tv === bv) v = mv;
    else {
      conflicts.push({ path: pathText(k), base: parsed(bv), theirs: parsed(tv), mine: parsed(mv) });
      continue;
    }
    if (v !== undefined) merged.set(k, v);
  }
  // A node one side removed while the other still changes or wires into it is a conflict too.
  const present = new Set<string>();
  for (const k of merged.keys()) {
    const [kind, id, field] = k.split(SEP);
    if ((kind === "node" && field === "op") || kind === "input") present.add(id);
  }
  for (const k of [...merged.keys()]) {
    const [kind, id, field] = k.split(SEP);
    if (kind !== "node") continue;
    if (!present.has(id)) {
      conflicts.push({ path: pathText(k), base: parsed(b.get(k)), theirs: parsed(t.get(k)), mine: parsed(m.get(k)) });
      merged.delete(k);
    } else if (field === "inputs") {
      const gone = (JSON.parse(merged.get(k)!) as unknown[]).map(refTarget).filter((r) => !present.has(r));
      if (gone.length) conflicts.push({ path: pathText(k), base: parsed(b.get(k)), theirs: parsed(t.get(k)), mine: parsed(m.get(k)) });
    }
  }
  const outputs = merged.get(key("outputs"));
  if (outputs) {
    const gone = (JSON.parse(outputs) as string[]).map(refTarget).filter((r) => !present.has(r));
    if (gone.length) conflicts.push({ path: "outputs", base: parsed(b.get(key("outputs"))), theirs: parsed(t.get(key("outputs"))), mine: parsed(m.get(key("outputs"))) });
  }
  if (conflicts.length) return { spec: null, conflicts };
  const order = [...(theirs.nodes ?? []).map((n) => n.id), ...(mine.nodes ?? []).map((n) => n.id)];
  return { spec: unflatten(merged, [...new Set(order)], theirs, mine), conflicts: [] };
}

/** What of theirs (base → theirs) saving mine as it is would take back: each key where mine differs from theirs. */
export function theirChangesUndone(base: GraphSpec, theirs: GraphSpec, mine: GraphSpec): UndoneChange[] {
  const b = flatten(base);
  const t = flatten(theirs);
  const m = flatten(mine);
  const undone: UndoneChange[] = [];
  for (const k of new Set([...b.keys(), ...t.keys()])) {
    const [bv, tv, mv] = [b.get(k), t.get(k), m.get(k)];
    if (tv !== bv && mv !== tv) undone.push({ path: pathText(k), base: parsed(bv), theirs: parsed(tv), mine: parsed(mv) });
  }
  return undone;
}
