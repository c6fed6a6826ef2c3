import { describe, expect, it } from "vitest";
import { importedSpec, sameName, weightsProblem } from "./importSpec";
import { importedRunOf } from "./AddWeights";

const spec = { version: 1, inputs: [{ id: "x", shape: [4] }], nodes: [{ id: "fc", op: "Linear", inputs: ["x"], params: { out_features: 3 } }], outputs: ["fc"] };

describe("importedSpec", () => {
  it("takes the spec the import command wrote, named after the file unless a name is typed", () => {
    expect(importedSpec("resnet_small.json", JSON.stringify(spec), "")).toEqual({ name: "resnet small", spec });
    expect(importedSpec("spec.json", JSON.stringify(spec), "  My net ").name).toBe("My net");
  });

  it("unwraps a pulled revision ({spec: ...})", () => {
    expect(importedSpec("rev.json", JSON.stringify({ number: 3, spec }), "").spec).toEqual(spec);
  });

  it("says what is wrong with a file that is not a spec", () => {
    expect(() => importedSpec("model.py", "import torch", "")).toThrow(/model.py is not JSON/);
    expect(() => importedSpec("data.json", JSON.stringify({ rows: [] }), "")).toThrow(/no "nodes" list/);
  });
});

describe("weightsProblem", () => {
  it("takes a .safetensors file and refuses a pickle by name", () => {
    expect(weightsProblem(null)).toBeNull();
    expect(weightsProblem({ name: "init.safetensors", size: 10 })).toBeNull();
    expect(weightsProblem({ name: "model.pt", size: 10 })).toMatch(/torch.save file \(pickle\)/);
    expect(weightsProblem({ name: "weights.npz", size: 10 })).toMatch(/not a .safetensors file/);
    expect(weightsProblem({ name: "empty.safetensors", size: 0 })).toMatch(/empty/);
  });
});

describe("sameName", () => {
  it("finds a graph of the same name, case and spaces aside", () => {
    const graphs = [{ id: 1, name: "skip mlp" }, { id: 2, name: "other" }];
    expect(sameName(graphs, "  Skip MLP ")).toEqual({ id: 1, name: "skip mlp" });
    expect(sameName(graphs, "skip mlp 2")).toBeNull();
    expect(sameName(graphs, "")).toBeNull();
  });
});

describe("importedRunOf", () => {
  it("reads the run of imported weights from the editor's URL", () => {
    expect(importedRunOf("?weights_run=12")).toBe(12);
    expect(importedRunOf("")).toBeNull();
    expect(importedRunOf("?weights_run=abc")).toBeNull();
  });
});
