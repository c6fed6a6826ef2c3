// Copy and paste a selection: nodes get fresh ids, wires between copied nodes come along.
import { parseBlockRef } from "./blocks";
import { idBase, nextId } from "./ids";
import { type CanvasDoc, type CanvasEdge, type CanvasNode, OUTPUT_PREFIX, edgeId, handleIndex } from "./model";

export interface Fragment {
  nodes: CanvasNode[];
  edges: CanvasEdge[];
}

export function copySelection(doc: CanvasDoc, selected: Set<string>): Fragment {
  const nodes = doc.nodes.filter((n) => selected.has(n.id)).map((n) => structuredClone({ ...n, selected: false }));
  const edges = doc.edges.filter((e) => selected.has(e.source) && selected.has(e.target)).map((e) => ({ ...e }));
  return { nodes, edges };
}

/** Adds the fragment to the doc, shifted by `offset`; returns the new doc and the pasted ids. */
export function pasteFragment(doc: CanvasDoc, fragment: Fragment, offset: { x: number; y: number }): { doc: CanvasDoc; ids: string[] } {
  const taken = new Set(doc.nodes.map((n) => n.id));
  const rename = new Map<string, string>();
  let outputs = doc.nodes.filter((n) => n.type === "output").length;
  for (const n of fragment.nodes) {
    let id: string;
    if (n.type === "output") {
      do id = `${OUTPUT_PREFIX}${++outputs}`;
      while (taken.has(id));
    } else {
      id = nextId(n.type === "op" ? idBase(parseBlockRef(n.data.op)?.name ?? n.data.op) : "input", taken);
    }
    taken.add(id);
    rename.set(n.id, id);
  }
  const nodes = fragment.nodes.map(
    (n) => ({ ...structuredClone(n), id: rename.get(n.id)!, position: { x: n.position.x + offset.x, y: n.position.y + offset.y }, selected: true }) as CanvasNode,
  );
  const edges = fragment.edges.map((e) => {
    const source = rename.get(e.source)!;
    const target = rename.get(e.target)!;
    return { ...e, id: edgeId(source, target, handleIndex(e.targetHandle)), source, target, selected: false };
  });
  return {
    doc: {
      ...doc,
      nodes: [...doc.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), ...nodes],
      edges: [...doc.edges, ...edges],
    },
    ids: nodes.map((n) => n.id),
  };
}

/** Removes nodes and every wire touching them, plus the given wires. */
export function removeFromDoc(doc: CanvasDoc, nodeIds: Set<string>, edgeIds: Set<string>): CanvasDoc {
  return {
    ...doc,
    nodes: doc.nodes.filter((n) => !nodeIds.has(n.id)),
    edges: doc.edges.filter((e) => !edgeIds.has(e.id) && !nodeIds.has(e.source) && !nodeIds.has(e.target)),
  };
}
