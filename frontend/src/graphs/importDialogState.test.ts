import { describe, expect, it } from "vitest";
import { importBlocked, importReducer, initialImport, refusalErrors } from "./importDialogState";

const spec = { version: 1, inputs: [{ id: "x", shape: [4] }], nodes: [{ id: "fc", op: "Linear", inputs: ["x"], params: { out_features: 3 } }], outputs: ["fc"] };
const weights = { name: "skip_mlp.safetensors", size: 120 };

describe("importReducer", () => {
  it("takes the spec and the weights in either order", () => {
    const specFirst = importReducer(importReducer(initialImport(), { type: "spec", fileName: "skip_mlp.json", text: JSON.stringify(spec) }), { type: "weights", file: weights });
    const weightsFirst = importReducer(importReducer(initialImport(), { type: "weights", file: weights }), { type: "spec", fileName: "skip_mlp.json", text: JSON.stringify(spec) });
    expect(weightsFirst).toEqual(specFirst);
    expect(specFirst.weights).toBe(weights);
    expect(specFirst.name).toBe("skip mlp");
    expect(importBlocked(specFirst)).toBeNull();
  });

  it("keeps a typed name when the spec file is chosen later", () => {
    const typed = importReducer(initialImport(), { type: "name", name: "My net" });
    expect(importReducer(typed, { type: "spec", fileName: "skip_mlp.json", text: JSON.stringify(spec) }).name).toBe("My net");
  });

  it("says beside each field what is wrong with a chosen file", () => {
    const bad = importReducer(initialImport(), { type: "spec", fileName: "notes.json", text: "{}" });
    expect(bad.errors.spec).toMatch(/no "nodes" list/);
    expect(importBlocked(bad)).toMatch(/spec file/);
    const pickle = importReducer(bad, { type: "weights", file: { name: "model.pt", size: 9 } });
    expect(pickle.weights).toBeNull();
    expect(pickle.errors.weights).toMatch(/pickle/);
    expect(importReducer(pickle, { type: "weights", file: weights }).errors.weights).toBeUndefined();
  });
});

describe("refusalErrors", () => {
  it("puts the server's refusal beside the weights, the spec or the name", () => {
    expect(refusalErrors("The weights do not fit this revision's model: head.weight: …", { file: ["head.weight: the graph has it, the file does not"] })).toEqual({
      weights: "The weights do not fit this revision's model: head.weight: …",
    });
    expect(refusalErrors("The weights do not fit this revision's model: a (and 1 more).", { file: ["a: missing", "b: missing"] })).toEqual({
      weights: "The weights do not fit this revision's model: a (and 1 more).",
      weightsDetail: ["a: missing", "b: missing"],
    });
    expect(refusalErrors("bad", { "spec.nodes.0.op": ["Unknown op"] })).toEqual({ spec: "Unknown op" });
    expect(refusalErrors("A graph needs a name.", { name: ["A graph needs a name."] })).toEqual({ name: "A graph needs a name." });
    expect(refusalErrors("Server down", null)).toEqual({ form: "Server down" });
  });
});
