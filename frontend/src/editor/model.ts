// The canvas document: React Flow nodes and edges plus what the spec carries beside them.
import type { Edge, Node } from "@xyflow/react";

export type OpNodeData = {
  kind: "op";
  op: string;
  /** Exactly the params the spec sets (undefined when the spec has no `params` key). */
  params?: Record<string, unknown>;
  /** Keys of the spec node that the canvas does not know, kept so a round trip loses nothing. */
  extra?: Record<string, unknown>;
};

export type InputNodeData = {
  kind: "input";
  shape: number[];
  dtype?: string;
  extra?: Record<string, unknown>;
};

export type OutputNodeData = { kind: "output" };

export type OpNode = Node<OpNodeData, "op">;
export type InputNode = Node<InputNodeData, "input">;
export type OutputNode = Node<OutputNodeData, "output">;
export type CanvasNode = OpNode | InputNode | OutputNode;
export type CanvasEdge = Edge;

export interface CanvasDoc {
  nodes: CanvasNode[];
  edges: CanvasEdge[];
  /** Top-level spec keys other than version/inputs/nodes/outputs/layout (ui minus what the canvas owns). */
  extra: Record<string, unknown>;
}

export const NODE_WIDTH = 184;
export const NODE_HEIGHT = 72;

/** Output nodes are canvas-only; their ids contain ':' so they never clash with spec ids. */
export const OUTPUT_PREFIX = "out:";

export function isOutputId(id: string): boolean {
  return id.startsWith(OUTPUT_PREFIX);
}

export function handleIndex(handle: string | null | undefined): number {
  if (!handle) return 0;
  const match = /^in(\d+)$/.exec(handle);
  return match ? Number(match[1]) : 0;
}

export function edgeId(source: string, target: string, slot: number): string {
  return `e:${source}->${target}:${slot}`;
}

/** Drops what React Flow adds while the user works (selection, measurements) so snapshots compare by content. */
export function cleanDoc(doc: CanvasDoc): CanvasDoc {
  return {
    nodes: doc.nodes.map((n) => ({ id: n.id, type: n.type, position: { ...n.position }, data: n.data }) as CanvasNode),
    edges: doc.edges.map((e) => ({
      id: e.id,
      source: e.source,
      target: e.target,
      sourceHandle: e.sourceHandle ?? "out",
      targetHandle: e.targetHandle ?? "in0",
      type: e.type,
    })),
    extra: doc.extra,
  };
}
