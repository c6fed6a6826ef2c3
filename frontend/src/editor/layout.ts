// Auto-layout with dagre: top to bottom, the data flowing down like the code reads.
import { Graph, layout } from "@dagrejs/dagre";
import { NODE_HEIGHT, NODE_WIDTH } from "./model";

export interface LayoutEdge {
  source: string;
  target: string;
}

/** Positions (top-left corners) for every id, ranked along the edges. */
export function layoutPositions(ids: string[], edges: LayoutEdge[]): Map<string, { x: number; y: number }> {
  const g = new Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 40, ranksep: 56, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  const known = new Set(ids);
  for (const id of ids) g.setNode(id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  edges.forEach((e, i) => {
    if (known.has(e.source) && known.has(e.target) && e.source !== e.target) g.setEdge(e.source, e.target, {}, `e${i}`);
  });
  layout(g);
  const out = new Map<string, { x: number; y: number }>();
  for (const id of ids) {
    const n = g.node(id) as { x: number; y: number };
    out.set(id, { x: Math.round(n.x - NODE_WIDTH / 2), y: Math.round(n.y - NODE_HEIGHT / 2) });
  }
  return out;
}
