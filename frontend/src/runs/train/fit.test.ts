import { describe, expect, it } from "vitest";
import { expectedOutputWidths, graphFitProblems } from "./fit";

const iris = { inputs: [{ id: "x", shape: [4] }], outputs: { logits: [3] } };

describe("graphFitProblems", () => {
  it("fits a dataset of the graph's shapes", () => {
    expect(graphFitProblems(iris, { task: "classification", feature_shape: [4], num_classes: 3 })).toEqual([]);
  });

  it("names the input shape to set when the features differ", () => {
    const [p] = graphFitProblems(iris, { task: "classification", feature_shape: [11], num_classes: 3 });
    expect(p.part).toBe("input");
    expect(p.node).toBe("x");
    expect(p.message).toBe("The graph's input x takes 4 features; this dataset has 11 features: set x's shape to [11].");
  });

  it("names the classes and the out_features to set when the output is too narrow", () => {
    const problems = graphFitProblems({ ...iris, outputs: { logits: [2] } }, { task: "classification", feature_shape: [4], num_classes: 3, classes: ["a", "b", "c"] });
    expect(problems).toEqual([
      { part: "output", node: "logits", message: "The last layer logits gives 2 outputs; this dataset has 3 classes (a, b, c): set logits's out_features to 3." },
    ]);
  });

  it("reports both an input and an output mismatch at once", () => {
    const problems = graphFitProblems({ ...iris, outputs: { logits: [3] } }, { task: "classification", feature_shape: [11], num_classes: 2 });
    expect(problems.map((p) => p.part)).toEqual(["input", "output"]);
  });

  it("wants one output for a regression target", () => {
    const [p] = graphFitProblems(iris, { task: "regression", feature_shape: [4], target: { mean: 3.2 } });
    expect(p.message).toContain("this dataset's target has width 1 (regression): set logits's out_features to 1");
  });

  it("says an image-shaped output needs flattening", () => {
    const [p] = graphFitProblems({ inputs: [{ id: "x", shape: [1, 8, 8] }], outputs: { conv: [4, 8, 8] } }, { task: "classification", feature_shape: [1, 8, 8], num_classes: 10 });
    expect(p.part).toBe("task");
    expect(p.message).toContain("add a Flatten and a Linear with out_features 10");
  });

  it("counts several inputs as a problem", () => {
    const [p] = graphFitProblems({ inputs: [{ id: "a", shape: [2] }, { id: "b", shape: [2] }], outputs: { y: [3] } }, { feature_shape: [4], num_classes: 3 });
    expect(p.message).toContain("The graph has 2 inputs");
  });
});

describe("expectedOutputWidths", () => {
  it("allows one logit for two classes under bce_with_logits", () => {
    expect(expectedOutputWidths({ task: "classification", num_classes: 2 }, "bce_with_logits").widths).toEqual([1]);
    expect(expectedOutputWidths({ task: "classification", num_classes: 2 }).widths).toEqual([2]);
  });
});
