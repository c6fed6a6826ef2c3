import { describe, expect, it } from "vitest";
import { docToSpec, specToDoc } from "./convert";
import { EditorStore } from "./store";

const spec = {
  version: 1 as const,
  inputs: [{ id: "x", shape: [4] }],
  nodes: [{ id: "linear_1", op: "Linear", params: { out_features: 8 }, inputs: ["x"] }],
  outputs: ["linear_1"],
};

const outFeatures = (s: EditorStore) => docToSpec(s.getState().committed).nodes![0].params!.out_features;

describe("editor store", () => {
  it("undoes a drag as one step, not one per frame", () => {
    const s = new EditorStore(specToDoc(spec));
    const start = s.getState().committed.nodes[1].position;
    for (let i = 1; i <= 5; i++) s.onNodesChange([{ type: "position", id: "linear_1", position: { x: i * 10, y: 0 }, dragging: true }]);
    expect(s.getState().canUndo).toBe(false);
    s.onNodesChange([{ type: "position", id: "linear_1", position: { x: 50.4, y: 0.6 }, dragging: false }]);
    expect(s.getState().committed.nodes[1].position).toEqual({ x: 50, y: 1 });
    s.undo();
    expect(s.getState().committed.nodes[1].position).toEqual(start);
    s.redo();
    expect(s.getState().committed.nodes[1].position).toEqual({ x: 50, y: 1 });
  });

  it("keeps selection out of the history", () => {
    const s = new EditorStore(specToDoc(spec));
    s.onNodesChange([{ type: "select", id: "linear_1", selected: true }]);
    expect(s.getState().canUndo).toBe(false);
    expect(s.selectedIds()).toEqual(new Set(["linear_1"]));
  });

  it("undoes and redoes parameter edits and deletions", () => {
    const s = new EditorStore(specToDoc(spec));
    const setOut = (v: number, at: number) =>
      s.edit(
        (d) => ({ ...d, nodes: d.nodes.map((n) => (n.type === "op" ? { ...n, data: { ...n.data, params: { out_features: v } } } : n)) }),
        "linear_1.out_features",
        at,
      );
    setOut(1, 1000);
    setOut(16, 1200);
    s.onNodesChange([{ type: "remove", id: "linear_1" }]);
    expect(docToSpec(s.getState().committed).nodes).toEqual([]);
    s.undo();
    expect(outFeatures(s)).toBe(16);
    s.undo();
    expect(outFeatures(s)).toBe(8);
    s.redo();
    s.redo();
    expect(docToSpec(s.getState().committed).nodes).toEqual([]);
  });

  it("makes a new undo step when typing in the same field resumes after a pause", () => {
    const s = new EditorStore(specToDoc(spec));
    const setOut = (v: number, at: number) =>
      s.edit((d) => ({ ...d, nodes: d.nodes.map((n) => (n.type === "op" ? { ...n, data: { ...n.data, params: { out_features: v } } } : n)) }), "k", at);
    setOut(0, 10_000);
    setOut(32, 20_000);
    s.undo();
    expect(outFeatures(s)).toBe(0);
    s.undo();
    expect(outFeatures(s)).toBe(8);
  });
});
