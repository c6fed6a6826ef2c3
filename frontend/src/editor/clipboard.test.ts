import { describe, expect, it } from "vitest";
import type { OpSchema } from "../api/types";
import { copySelection, pasteFragment, removeFromDoc } from "./clipboard";
import { connectionProblem, inputSlotCount } from "./connect";
import { docToSpec, specToDoc } from "./convert";

const doc = () =>
  specToDoc({
    version: 1,
    inputs: [{ id: "x", shape: [4] }],
    nodes: [
      { id: "linear_1", op: "Linear", params: { out_features: 8 }, inputs: ["x"] },
      { id: "relu_1", op: "ReLU", inputs: ["linear_1"] },
      { id: "linear_2", op: "Linear", params: { out_features: 2 }, inputs: ["relu_1"] },
    ],
    outputs: ["linear_2"],
  });

const op = (name: string, min: number, max: number | null): OpSchema => ({
  name, category: "x", help: "", arity: { min, max }, input_dtypes: ["float32"], input: "", inferred: [], kind: "module", params: [],
});
const OPS = new Map([
  ["Linear", op("Linear", 1, 1)],
  ["ReLU", op("ReLU", 1, 1)],
  ["Add", op("Add", 2, 2)],
  ["Concat", op("Concat", 1, null)],
]);

describe("copy and paste", () => {
  it("copies the wires inside the selection and none that leave it", () => {
    const frag = copySelection(doc(), new Set(["linear_1", "relu_1"]));
    expect(frag.nodes.map((n) => n.id)).toEqual(["linear_1", "relu_1"]);
    expect(frag.edges.map((e) => [e.source, e.target])).toEqual([["linear_1", "relu_1"]]);
  });

  it("pastes with fresh python ids, rewired among themselves", () => {
    const d = doc();
    const { doc: pasted, ids } = pasteFragment(d, copySelection(d, new Set(["linear_1", "relu_1"])), { x: 40, y: 40 });
    expect(ids).toEqual(["linear_3", "relu_2"]);
    const spec = docToSpec(pasted);
    expect(spec.nodes!.find((n) => n.id === "relu_2")!.inputs).toEqual(["linear_3"]);
    expect(spec.nodes!.find((n) => n.id === "linear_3")!.inputs).toEqual([]);
    expect(spec.nodes!.find((n) => n.id === "linear_3")!.params).toEqual({ out_features: 8 });
  });

  it("deletes nodes with the wires that touch them", () => {
    const d = removeFromDoc(doc(), new Set(["relu_1"]), new Set());
    expect(d.edges.map((e) => [e.source, e.target])).toEqual([["x", "linear_1"], ["linear_2", "out:1"]]);
  });
});

describe("which wires are allowed", () => {
  it("allows a free slot within arity", () => {
    const d = removeFromDoc(doc(), new Set(), new Set(doc().edges.filter((e) => e.target === "relu_1").map((e) => e.id)));
    expect(connectionProblem(d, OPS, { source: "linear_1", target: "relu_1", targetHandle: "in0" })).toBeNull();
  });

  it("refuses a second wire into a one-input op, a cycle, and wires into a graph input", () => {
    // A wire onto a taken slot replaces the one there (connect.test.ts), so it is no problem.
    expect(connectionProblem(doc(), OPS, { source: "x", target: "relu_1", targetHandle: "in0" })).toBeNull();
    expect(connectionProblem(doc(), OPS, { source: "x", target: "relu_1", targetHandle: "in1" })).toMatch(/^relu_1 \(ReLU\) takes one input; /);
    expect(connectionProblem(doc(), OPS, { source: "linear_2", target: "linear_1", targetHandle: "in1" })).toMatch(/takes one input/);
    const free = removeFromDoc(doc(), new Set(), new Set(doc().edges.filter((e) => e.target === "linear_1").map((e) => e.id)));
    expect(connectionProblem(free, OPS, { source: "linear_2", target: "linear_1", targetHandle: "in0" })).toMatch(/^cycle: linear_1 already feeds linear_2/);
    expect(connectionProblem(doc(), OPS, { source: "linear_1", target: "x", targetHandle: "in0" })).toBe("x is a graph input: it takes no wire");
    expect(connectionProblem(doc(), OPS, { source: "linear_1", target: "out:1", targetHandle: "in0" })).toBeNull();
  });

  it("shows every slot of a fixed arity and a spare slot for open arity", () => {
    expect(inputSlotCount(OPS.get("Add"), [])).toBe(2);
    expect(inputSlotCount(OPS.get("Linear"), [0])).toBe(1);
    expect(inputSlotCount(OPS.get("Concat"), [])).toBe(1);
    expect(inputSlotCount(OPS.get("Concat"), [0, 1])).toBe(3);
    expect(inputSlotCount(undefined, [0, 2])).toBe(3);
  });
});
