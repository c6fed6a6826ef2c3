import { describe, expect, it } from "vitest";
import type { OpSchema } from "../api/types";
import { connectionProblem, outputPortCount, reportPorts } from "./connect";
import { specToDoc } from "./convert";

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
