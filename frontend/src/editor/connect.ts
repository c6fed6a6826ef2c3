// Which wires the canvas accepts: arity from the op catalog, ranks from its input hints, no cycles.
// A wire dropped on an input slot that already has one replaces that wire (as in ComfyUI).
import type { NodeReport, OpSchema, ValidationReport } from "../api/types";
import { type CanvasDoc, type CanvasEdge, edgeId, handleIndex } from "./model";

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

/** The wire a new one dropped on the same input slot would replace, if any. */
export function replacedEdge(doc: CanvasDoc, c: ConnectionAttempt): CanvasEdge | null {
  const slot = handleIndex(c.targetHandle);
  return doc.edges.find((e) => e.target === c.target && handleIndex(e.targetHandle) === slot) ?? null;
}

/** The document with the wire drawn, the wire it replaces (same input slot) removed: one undo step. */
export function connectInDoc(doc: CanvasDoc, c: ConnectionAttempt): CanvasDoc {
  if (!c.source || !c.target) return doc;
  const slot = handleIndex(c.targetHandle);
  const old = replacedEdge(doc, c);
  // The same wire dropped again changes nothing (and makes no undo step).
  if (old && old.source === c.source && (old.sourceHandle ?? "out") === (c.sourceHandle ?? "out")) return doc;
  const wire: CanvasEdge = { id: edgeId(c.source, c.target, slot), source: c.source, target: c.target, sourceHandle: c.sourceHandle ?? "out", targetHandle: `in${slot}` };
  return { ...doc, edges: [...doc.edges.filter((e) => e !== old && e.id !== wire.id), wire] };
}

/**
 * The ranks (per-sample dimensions) an op's catalog hint accepts: `[C, H, W]` is 3, `[..., features]`
 * at least 1, `[C] or [C, L]` 1 or 2. Null when the hint is not a list of layouts ("any", "equal shapes",
 * a hint per input): the server's check then has the last word.
 */
export function acceptedRanks(hint: string): { exact: number[] } | { atLeast: number } | null {
  const layouts = hint.match(/\[[^\]]*\]/g);
  if (!layouts) return null;
  // Nothing but the layouts and their separators ("," and "or"): one hint for every input.
  if (hint.replace(/\[[^\]]*\]/g, "").replace(/,|\bor\b/g, "").trim() !== "") return null;
  const dims = layouts.map((l) => l.slice(1, -1).split(",").map((d) => d.trim()));
  const open = dims.filter((d) => d.includes("..."));
  if (open.length) return { atLeast: Math.min(...open.map((d) => d.length - 1)) };
  return { exact: dims.map((d) => d.length) };
}

function shapeText(shape: number[]): string {
  return `[${shape.join(", ")}]`;
}

/** The shape a wire from `source` (handle `outK` for a port) carries, from the latest check. */
function sourceShape(report: ValidationReport | null | undefined, source: string, handle: string | null | undefined): number[] | null {
  const info = report?.nodes[source];
  if (!info) return null;
  const port = /^out(\d+)$/.exec(handle ?? "");
  if (port) return info.ports?.[Number(port[1])] ?? null;
  return info.shape ?? null;
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

function count(n: number, what: string): string {
  return n === 1 ? `one ${what}` : `${n} ${what}s`;
}

/**
 * Why a wire may not be drawn, in words for the user, or null when it may. A wire onto a slot that
 * already has one is allowed (it replaces that one); `report` (the latest check) adds the rank check.
 */
export function connectionProblem(
  doc: CanvasDoc,
  ops: Map<string, OpSchema>,
  c: ConnectionAttempt,
  report?: ValidationReport | null,
): string | null {
  if (!c.source || !c.target) return "incomplete wire";
  if (c.source === c.target) return `${c.source} cannot feed itself`;
  const source = doc.nodes.find((n) => n.id === c.source);
  const target = doc.nodes.find((n) => n.id === c.target);
  if (!source || !target) return "unknown node";
  if (source.type === "output") return "an output has no outgoing wire";
  if (source.type === "op" && ops.get(source.data.op)?.multi_output && !/^out\d+$/.test(c.sourceHandle ?? ""))
    return `${source.data.op} has several outputs: draw the wire from one of them`;
  if (target.type === "input") return `${target.id} is a graph input: it takes no wire`;
  const slot = handleIndex(c.targetHandle);
  // The wire already on this slot goes away, so it counts neither for arity nor for cycles.
  const old = replacedEdge(doc, c);
  const rest: CanvasDoc = { ...doc, edges: doc.edges.filter((e) => e !== old) };
  const incoming = rest.edges.filter((e) => e.target === c.target);
  if (target.type === "output") {
    if (incoming.length >= 1) return "an output takes one wire";
  } else {
    const op = ops.get(target.data.op);
    const max = op?.arity.max;
    if (max !== null && max !== undefined && (incoming.length >= max || slot >= max))
      return `${target.id} (${target.data.op}) takes ${count(max, "input")}; drop the wire on its input to replace the one there`;
    const shape = sourceShape(report, c.source, c.sourceHandle);
    const ranks = op ? acceptedRanks(op.input) : null;
    if (shape && ranks) {
      const fits = "exact" in ranks ? ranks.exact.includes(shape.length) : shape.length >= ranks.atLeast;
      if (!fits) return `shape mismatch: ${target.id} (${target.data.op}) needs a ${op!.input} input, ${c.source} gives ${shapeText(shape)}`;
    }
    if (shape && op?.input === "equal shapes") {
      // Sizes can still be fixed by a parameter; a different number of dimensions rarely can.
      const other = incoming.map((e) => sourceShape(report, e.source, e.sourceHandle)).find((s) => s !== null);
      if (other && other.length !== shape.length)
        return `shape mismatch: ${target.id} (${target.data.op}) needs equal shapes, ${c.source} gives ${shapeText(shape)} and the other input ${shapeText(other)}`;
    }
  }
  if (reaches(rest, c.target, c.source)) return `cycle: ${c.target} already feeds ${c.source}, so this wire would close a loop`;
  return null;
}
