// Which wires the canvas accepts: arity from the op catalog, one wire per input slot, no cycles.
import type { NodeReport, OpSchema } from "../api/types";
import { type CanvasDoc, handleIndex } from "./model";

export interface ConnectionAttempt {
  source: string | null;
  target: string | null;
  sourceHandle?: string | null;
  targetHandle?: string | null;
}

/** How many input slots a node shows: all of them for a small fixed arity, else the used ones plus a spare. */
export function inputSlotCount(op: OpSchema | undefined, usedSlots: number[]): number {
  const highest = usedSlots.length ? Math.max(...usedSlots) + 1 : 0;
  if (!op) return Math.max(1, highest);
  const { min, max } = op.arity;
  if (max !== null && max <= 8) return Math.max(max, highest);
  const wanted = Math.max(min, highest + 1, 1);
  return max === null ? wanted : Math.min(max, wanted);
}

/**
 * The output shapes per port of a node with several outputs, as the validation report gives them
 * (`ports`), or null for a node with one output (or no report yet).
 */
export function reportPorts(info: NodeReport | undefined): number[][] | null {
  return info?.ports ?? null;
}

/** How many output handles a node with several outputs shows: its ports, at least the wired ones, at least 2. */
export function outputPortCount(ports: number[][] | null, usedHandles: string[]): number {
  const wired = usedHandles.map((h) => /^out(\d+)$/.exec(h)).filter((m) => m !== null).map((m) => Number(m![1]) + 1);
  return Math.max(ports?.length ?? 2, ...wired, 1);
}

function reaches(doc: CanvasDoc, from: string, to: string): boolean {
  const out = new Map<string, string[]>();
  for (const e of doc.edges) out.set(e.source, [...(out.get(e.source) ?? []), e.target]);
  const seen = new Set<string>();
  const stack = [from];
  while (stack.length) {
    const id = stack.pop()!;
    if (id === to) return true;
    if (seen.has(id)) continue;
    seen.add(id);
    stack.push(...(out.get(id) ?? []));
  }
  return false;
}

/** Why a wire may not be drawn, or null when it may. */
export function connectionProblem(doc: CanvasDoc, ops: Map<string, OpSchema>, c: ConnectionAttempt): string | null {
  if (!c.source || !c.target) return "incomplete wire";
  if (c.source === c.target) return "a node cannot feed itself";
  const source = doc.nodes.find((n) => n.id === c.source);
  const target = doc.nodes.find((n) => n.id === c.target);
  if (!source || !target) return "unknown node";
  if (source.type === "output") return "an output has no outgoing wire";
  if (source.type === "op" && ops.get(source.data.op)?.multi_output && !/^out\d+$/.test(c.sourceHandle ?? ""))
    return `${source.data.op} has several outputs: draw the wire from one of them`;
  if (target.type === "input") return "a graph input takes no wire";
  const slot = handleIndex(c.targetHandle);
  const incoming = doc.edges.filter((e) => e.target === c.target);
  if (incoming.some((e) => handleIndex(e.targetHandle) === slot)) return "that input slot is taken";
  if (target.type === "output") {
    if (incoming.length >= 1) return "an output takes one wire";
  } else {
    const op = ops.get(target.data.op);
    const max = op?.arity.max;
    if (max !== null && max !== undefined && incoming.length >= max)
      return `${target.data.op} takes at most ${max} input${max === 1 ? "" : "s"}`;
    if (max !== null && max !== undefined && slot >= max) return `${target.data.op} has ${max} input slot${max === 1 ? "" : "s"}`;
  }
  if (reaches(doc, c.target, c.source)) return "the wire would close a cycle";
  return null;
}
