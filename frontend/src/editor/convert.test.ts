import { describe, expect, it } from "vitest";
import type { GraphSpec, NodeSpec } from "../api/types";
import type { BlockGraphSpec } from "./blocks";
import { EMPTY_SPEC, docToSpec, modelPart, normalizeSpec, specToDoc } from "./convert";
import { TEMPLATES } from "./templates";

const DESIGN_EXAMPLE: GraphSpec = {
  version: 1,
  inputs: [{ id: "x", shape: [1, 8, 8], dtype: "float32" }],
  nodes: [
    { id: "flat", op: "Flatten", inputs: ["x"] },
    { id: "fc1", op: "Linear", params: { out_features: 128 }, inputs: ["flat"] },
    { id: "act", op: "ReLU", inputs: ["fc1"] },
    { id: "fc2", op: "Linear", params: { out_features: 10 }, inputs: ["act"] },
  ],
  outputs: ["fc2"],
  layout: { fc1: { x: 120, y: 80 } },
};

const TWO_INPUTS_ORDERED: GraphSpec = {
  version: 1,
  inputs: [
    { id: "a", shape: [4] },
    { id: "b", shape: [6], dtype: "float32" },
  ],
  nodes: [
    { id: "cat", op: "Concat", params: { dim: 0 }, inputs: ["b", "a", "b"] },
    { id: "sum", op: "Add", inputs: ["cat", "cat"], note: "kept" } as NodeSpec,
  ],
  outputs: ["sum", "cat"],
  ui: { title: "ordered inputs" },
};

// Output ports: Split's second piece feeds a gate, its first the product, and one is a model output.
const PORTS: GraphSpec = {
  version: 1,
  inputs: [{ id: "x", shape: [6, 4], dtype: "float32" }],
  nodes: [
    { id: "halves", op: "Split", params: { split_size_or_sections: 3 }, inputs: ["x"] },
    { id: "gate", op: "Sigmoid", inputs: ["halves:1"] },
    { id: "gated", op: "Mul", inputs: ["halves:0", "gate"] },
    { id: "both", op: "Add", inputs: ["halves:1", "halves:0", "gated"] },
  ],
  outputs: ["both", "halves:1"],
};

const SPECS: [string, GraphSpec][] = [
  ["design example", DESIGN_EXAMPLE],
  ["ordered inputs", TWO_INPUTS_ORDERED],
  ["output ports", PORTS],
  ["empty", EMPTY_SPEC],
  ...TEMPLATES.map((t): [string, GraphSpec] => [`template ${t.key}`, t.spec]),
];

describe("spec <-> canvas", () => {
  it("bundles the starter specs from examples/specs", () => {
    expect(TEMPLATES.length).toBeGreaterThanOrEqual(6);
    // Version 2 only where a template places blocks.
    for (const t of TEMPLATES) expect(t.spec.version).toBe((t.spec as BlockGraphSpec).blocks?.length ? 2 : 1);
  });

  it.each(SPECS)("%s keeps its model through a round trip", (_name, spec) => {
    const back = docToSpec(specToDoc(spec));
    expect(modelPart(back)).toEqual(modelPart(spec));
  });

  it.each(SPECS)("%s keeps layout and ui exactly on a second round trip", (_name, spec) => {
    const once = docToSpec(specToDoc(spec));
    const twice = docToSpec(specToDoc(once));
    expect(twice).toEqual(once);
  });

  it("keeps the positions a spec gives and lays out the rest", () => {
    const doc = specToDoc(DESIGN_EXAMPLE);
    expect(doc.nodes.find((n) => n.id === "fc1")!.position).toEqual({ x: 120, y: 80 });
    for (const n of doc.nodes) expect(Number.isFinite(n.position.x) && Number.isFinite(n.position.y)).toBe(true);
    const ys = ["x", "flat", "act", "fc2"].map((id) => doc.nodes.find((n) => n.id === id)!.position.y);
    expect(ys).toEqual([...ys].sort((a, b) => a - b));
  });

  it("draws graph inputs and outputs as nodes, wired in input order", () => {
    const doc = specToDoc(TWO_INPUTS_ORDERED);
    expect(doc.nodes.map((n) => n.type)).toEqual(["input", "input", "op", "op", "output", "output"]);
    const cat = doc.edges.filter((e) => e.target === "cat").map((e) => [e.source, e.targetHandle]);
    expect(cat).toEqual([["b", "in0"], ["a", "in1"], ["b", "in2"]]);
  });

  it("keeps a dangling output node through save and load", () => {
    const doc = specToDoc(EMPTY_SPEC);
    expect(doc.nodes.filter((n) => n.type === "output")).toHaveLength(1);
    const spec = docToSpec(doc);
    expect(spec.outputs).toEqual([]);
    expect(specToDoc(spec).nodes.filter((n) => n.type === "output")).toHaveLength(1);
  });

  it("writes nodes in an order the data can flow in, whatever order they were drawn", () => {
    const doc = specToDoc(DESIGN_EXAMPLE);
    const fc2 = doc.nodes.find((n) => n.id === "fc2")!;
    doc.nodes = [fc2, ...doc.nodes.filter((n) => n !== fc2)];
    expect(docToSpec(doc).nodes!.map((n) => n.id)).toEqual(["flat", "fc1", "act", "fc2"]);
  });
});

describe("unsaved changes", () => {
  it("a saved spec as the server spells it (defaults filled in) is not a change once opened", () => {
    const asServerStores = (spec: GraphSpec): GraphSpec => ({
      ...((spec as BlockGraphSpec).blocks
        ? {
            blocks: (spec as BlockGraphSpec).blocks!.map((b) => ({
              description: "",
              layout: {},
              ui: {},
              ...b,
              params: b.params.map((p) => ({ description: "", ...p })),
              nodes: b.nodes.map((n) => ({ params: {}, inputs: [], ...n })),
            })),
          }
        : {}),
      version: spec.version,
      inputs: spec.inputs.map((i) => ({ dtype: "float32", ...i })),
      nodes: (spec.nodes ?? []).map((n) => ({ params: {}, inputs: [], ...n })),
      outputs: spec.outputs ?? [],
      layout: spec.layout ?? {},
      ui: spec.ui ?? {},
    });
    for (const [, spec] of SPECS) {
      const onCanvas = docToSpec(specToDoc(asServerStores(docToSpec(specToDoc(spec)))));
      expect(normalizeSpec(onCanvas)).toBe(normalizeSpec(docToSpec(specToDoc(spec))));
    }
  });

  it("a changed parameter or a moved node is a change", () => {
    const base = docToSpec(specToDoc(DESIGN_EXAMPLE));
    const moved = structuredClone(base);
    (moved.layout as Record<string, { x: number; y: number }>).fc1.x += 10;
    const edited = structuredClone(base);
    edited.nodes![1].params = { out_features: 64 };
    expect(normalizeSpec(moved)).not.toBe(normalizeSpec(base));
    expect(normalizeSpec(edited)).not.toBe(normalizeSpec(base));
  });
});

describe("output nodes of a spec without stored output places", () => {
  it("sit right under the node they read", () => {
    const doc = specToDoc({
      version: 1,
      inputs: [{ id: "x", shape: [4] }],
      nodes: [{ id: "fc", op: "Linear", params: { out_features: 3 }, inputs: ["x"] }],
      outputs: ["fc"],
      layout: { x: { x: 240, y: 40 }, fc: { x: 240, y: 150 } },
    } as GraphSpec);
    const out = doc.nodes.find((n) => n.type === "output")!;
    expect(out.position.x).toBe(240);
    expect(out.position.y).toBeGreaterThan(150);
    expect(out.position.y).toBeLessThan(150 + 200);
  });
});

describe("nodes with several outputs", () => {
  it("draws one wire per port reference, from the port's own handle", () => {
    const doc = specToDoc(PORTS);
    const wires = doc.edges.map((e) => `${e.source}.${e.sourceHandle} -> ${e.target}.${e.targetHandle}`);
    expect(wires).toEqual([
      "x.out -> halves.in0",
      "halves.out1 -> gate.in0",
      "halves.out0 -> gated.in0",
      "gate.out -> gated.in1",
      "halves.out1 -> both.in0",
      "halves.out0 -> both.in1",
      "gated.out -> both.in2",
      "both.out -> out:1.in0",
      "halves.out1 -> out:2.in0",
    ]);
    // Edges are between nodes (never to a "halves:1" node that does not exist).
    const ids = new Set(doc.nodes.map((n) => n.id));
    for (const e of doc.edges) expect(ids.has(e.source) && ids.has(e.target)).toBe(true);
  });

  it("remembers the port of a wire drawn on the canvas", () => {
    const doc = specToDoc(PORTS);
    const edges = doc.edges.filter((e) => e.target !== "gate");
    edges.push({ id: "e:new", source: "halves", sourceHandle: "out0", target: "gate", targetHandle: "in0" });
    const spec = docToSpec({ ...doc, edges });
    expect(spec.nodes!.find((n) => n.id === "gate")!.inputs).toEqual(["halves:0"]);
  });

  it("orders a node after the node whose port it reads", () => {
    const shuffled: GraphSpec = { ...PORTS, nodes: [PORTS.nodes![1], PORTS.nodes![0], PORTS.nodes![2], PORTS.nodes![3]] };
    const back = docToSpec(specToDoc(shuffled));
    expect(back.nodes!.map((n) => n.id)).toEqual(["halves", "gate", "gated", "both"]);
  });
});
