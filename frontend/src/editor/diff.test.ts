import { describe, expect, it } from "vitest";
import type { GraphSpec } from "../api/types";
import { changeCount, localDiff, markedView } from "./diff";

const before: GraphSpec = {
  version: 1,
  inputs: [{ id: "x", shape: [4] }],
  nodes: [
    { id: "fc1", op: "Linear", params: { out_features: 16 }, inputs: ["x"] },
    { id: "act", op: "ReLU", inputs: ["fc1"] },
    { id: "fc2", op: "Linear", params: { out_features: 3 }, inputs: ["act"] },
  ],
  outputs: ["fc2"],
  layout: {
    x: { x: 0, y: 0 },
    fc1: { x: 0, y: 100 },
    act: { x: 0, y: 200 },
    fc2: { x: 0, y: 300 },
  },
};

const after: GraphSpec = {
  version: 1,
  inputs: [{ id: "x", shape: [4] }],
  nodes: [
    { id: "fc1", op: "Linear", params: { out_features: 24 }, inputs: ["x"] },
    { id: "drop", op: "Dropout", params: { p: 0.1 }, inputs: ["fc1"] },
    { id: "fc2", op: "Linear", params: { out_features: 3 }, inputs: ["drop"] },
  ],
  outputs: ["fc2"],
  layout: {
    x: { x: 0, y: 0 },
    fc1: { x: 0, y: 100 },
    drop: { x: 200, y: 200 },
    fc2: { x: 0, y: 300 },
  },
};

describe("localDiff", () => {
  it("lists nodes added, removed and changed parameter by parameter, and the wires", () => {
    const d = localDiff(before, after, 3, 4);
    expect(d.nodes.added.map((n) => n.id)).toEqual(["drop"]);
    expect(d.nodes.removed.map((n) => n.id)).toEqual(["act"]);
    expect(d.nodes.changed).toEqual([
      {
        id: "fc1",
        op: null,
        params: [{ name: "out_features", from: 16, to: 24 }],
      },
    ]);
    expect(d.edges.added).toEqual([
      { source: "fc1", target: "drop" },
      { source: "drop", target: "fc2" },
    ]);
    expect(d.edges.removed).toEqual([
      { source: "fc1", target: "act" },
      { source: "act", target: "fc2" },
    ]);
    expect(d.lines).toContain("fc1.out_features: 16 -> 24");
    expect(changeCount(d)).toBe(7);
    expect(localDiff(before, before).lines).toEqual([]);
  });
});

describe("markedView", () => {
  it("draws the newer graph, marks added/changed, and brings back removed nodes from the older one", () => {
    const view = markedView(before, after, localDiff(before, after));
    const status = Object.fromEntries(view.nodes.map((n) => [n.id, n.data.status]));
    expect(status).toMatchObject({
      x: "same",
      fc1: "changed",
      drop: "added",
      fc2: "same",
      act: "removed",
    });
    const act = view.nodes.find((n) => n.id === "act")!;
    expect(act.position).toEqual({ x: 0, y: 200 });
    expect(act.data.label).toBe("ReLU");
    const fc1 = view.nodes.find((n) => n.id === "fc1")!;
    expect(fc1.data.changes).toEqual([{ name: "out_features", from: 16, to: 24 }]);
    const edges = Object.fromEntries(view.edges.map((e) => [`${e.source}->${e.target}`, e.status]));
    expect(edges).toMatchObject({
      "x->fc1": "same",
      "fc1->drop": "added",
      "drop->fc2": "added",
      "fc1->act": "removed",
      "act->fc2": "removed",
    });
  });

  it("follows the server's diff for which nodes changed", () => {
    const server = {
      from: 3,
      to: 4,
      nodes: {
        added: [],
        removed: [],
        changed: [{ id: "fc2", op: { from: "Linear", to: "Bilinear" }, params: [] }],
      },
      edges: { added: [], removed: [] },
      lines: ["fc2.op: Linear -> Bilinear"],
    };
    const view = markedView(before, before, server);
    const fc2 = view.nodes.find((n) => n.id === "fc2")!;
    expect(fc2.data.status).toBe("changed");
    expect(fc2.data.opChange).toEqual({ from: "Linear", to: "Bilinear" });
    expect(view.nodes.filter((n) => n.data.status !== "same").map((n) => n.id)).toEqual(["fc2"]);
  });
});
