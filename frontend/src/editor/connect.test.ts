import { describe, expect, it } from "vitest";
import type { OpSchema } from "../api/types";
import { acceptedRanks, connectInDoc, connectionProblem, outputPortCount, replacedEdge, reportPorts } from "./connect";
import { docToSpec, specToDoc } from "./convert";

const split: OpSchema = { name: "Split", category: "Shape", help: "", arity: { min: 1, max: 1 }, input_dtypes: ["float32"], input: "any", inferred: [], kind: "function", multi_output: true, params: [] };
const relu: OpSchema = { name: "ReLU", category: "Activation", help: "", arity: { min: 1, max: 1 }, input_dtypes: ["float32"], input: "any", inferred: [], kind: "module", multi_output: false, params: [] };
const OPS = new Map([
  ["Split", split],
  ["ReLU", relu],
]);

describe("wires from a node with several outputs", () => {
  const doc = specToDoc({
    version: 1,
    inputs: [{ id: "x", shape: [4] }],
    nodes: [
      { id: "halves", op: "Split", params: { split_size_or_sections: 2 }, inputs: ["x"] },
      { id: "act", op: "ReLU", inputs: [] },
    ],
    outputs: [],
  });

  it("starts from one of the ports, never the node as a whole", () => {
    expect(connectionProblem(doc, OPS, { source: "halves", sourceHandle: "out1", target: "act", targetHandle: "in0" })).toBeNull();
    expect(connectionProblem(doc, OPS, { source: "halves", sourceHandle: "out", target: "act", targetHandle: "in0" })).toBe(
      "Split has several outputs: draw the wire from one of them",
    );
  });

  it("shows a handle per port the report gives, and every wired one", () => {
    expect(reportPorts({ op: "Split", shape: [2], params: 0, ports: [[2], [2], [1]] } as never)).toEqual([[2], [2], [1]]);
    expect(reportPorts({ op: "ReLU", shape: [2], params: 0 })).toBeNull();
    expect(reportPorts(undefined)).toBeNull();
    expect(outputPortCount([[2], [2], [1]], ["out0"])).toBe(3);
    expect(outputPortCount(null, [])).toBe(2);
    expect(outputPortCount(null, ["out4"])).toBe(5);
  });
});

const conv: OpSchema = { ...relu, name: "Conv2d", category: "Convolution", input: "[C, H, W]" };
const linear: OpSchema = { ...relu, name: "Linear", category: "Linear", input: "[..., features]" };
const add: OpSchema = { ...relu, name: "Add", category: "Merge", arity: { min: 2, max: null }, input: "equal shapes" };
const CATALOG = new Map([
  ["ReLU", relu],
  ["Conv2d", conv],
  ["Linear", linear],
  ["Add", add],
]);

describe("a wire dropped on an input that already has one", () => {
  const doc = specToDoc({
    version: 1,
    inputs: [{ id: "x", shape: [8] }],
    nodes: [
      { id: "fc1", op: "Linear", params: { out_features: 4 }, inputs: ["x"] },
      { id: "fc2", op: "Linear", params: { out_features: 4 }, inputs: ["fc1"] },
    ],
    outputs: ["fc2"],
  });

  it("replaces that wire, keeping the other wires", () => {
    const wire = { source: "x", sourceHandle: "out", target: "fc2", targetHandle: "in0" };
    expect(connectionProblem(doc, CATALOG, wire)).toBeNull();
    expect(replacedEdge(doc, wire)?.source).toBe("fc1");
    const next = connectInDoc(doc, wire);
    expect(next.edges.map((e) => `${e.source}->${e.target}:${e.targetHandle}`).sort()).toEqual(["fc2->out:1:in0", "x->fc1:in0", "x->fc2:in0"]);
    expect(docToSpec(next).nodes!.find((n) => n.id === "fc2")!.inputs).toEqual(["x"]);
    // The wire that is already there, dropped again: nothing changes.
    expect(connectInDoc(doc, { source: "fc1", sourceHandle: "out", target: "fc2", targetHandle: "in0" })).toBe(doc);
  });

  it("refuses a second slot on a one-input op with the node's name and what to do", () => {
    expect(connectionProblem(doc, CATALOG, { source: "x", target: "fc2", targetHandle: "in1" })).toBe(
      "fc2 (Linear) takes one input; drop the wire on its input to replace the one there",
    );
  });

  it("names the cycle; the wire being replaced does not count", () => {
    expect(connectionProblem(doc, CATALOG, { source: "fc2", target: "fc1", targetHandle: "in0" })).toBe(
      "cycle: fc1 already feeds fc2, so this wire would close a loop",
    );
  });
});

describe("shape checks from the latest report", () => {
  const doc = specToDoc({
    version: 1,
    inputs: [{ id: "img", shape: [1, 8, 8] }],
    nodes: [
      { id: "flat", op: "ReLU", inputs: ["img"] },
      { id: "conv", op: "Conv2d", inputs: [] },
      { id: "sum", op: "Add", inputs: ["img"] },
    ],
    outputs: [],
  });
  const report = {
    valid: false,
    errors: [],
    warnings: [],
    outputs: {},
    total_params: 0,
    activation_bytes: 0,
    nodes: { img: { op: "Input", shape: [1, 8, 8], params: 0 }, flat: { op: "Flatten", shape: [64], params: 0 } },
  } as never;

  it("reads the ranks a hint accepts", () => {
    expect(acceptedRanks("[C, H, W]")).toEqual({ exact: [3] });
    expect(acceptedRanks("[C] or [C, L]")).toEqual({ exact: [1, 2] });
    expect(acceptedRanks("[C, L], [C, H, W] or [C, D, H, W]")).toEqual({ exact: [2, 3, 4] });
    expect(acceptedRanks("[..., features]")).toEqual({ atLeast: 1 });
    expect(acceptedRanks("any")).toBeNull();
    expect(acceptedRanks("[T, E] target, then [S, E] memory")).toBeNull();
  });

  it("refuses a wire whose number of dimensions the op cannot take", () => {
    expect(connectionProblem(doc, CATALOG, { source: "flat", target: "conv", targetHandle: "in0" }, report)).toBe(
      "shape mismatch: conv (Conv2d) needs a [C, H, W] input, flat gives [64]",
    );
    expect(connectionProblem(doc, CATALOG, { source: "img", target: "conv", targetHandle: "in0" }, report)).toBeNull();
    expect(connectionProblem(doc, CATALOG, { source: "flat", target: "sum", targetHandle: "in1" }, report)).toBe(
      "shape mismatch: sum (Add) needs equal shapes, flat gives [64] and the other input [1, 8, 8]",
    );
    // Without a report (not checked yet) the server's check decides later.
    expect(connectionProblem(doc, CATALOG, { source: "flat", target: "conv", targetHandle: "in0" })).toBeNull();
  });
});
