import { describe, expect, it } from "vitest";
import { planView } from "./initPlan";

describe("the plan of a start from a checkpoint", () => {
  it("lists what does not load node by node, in words", () => {
    const view = planView({
      loaded: ["conv1.weight", "conv1.bias", "fc2.bias"],
      mismatched: [
        { node: "fc1", parameter: "fc1.weight", checkpoint_shape: [64, 256], graph_shape: [128, 256] },
        { node: "fc1", parameter: "fc1.bias", checkpoint_shape: [64], graph_shape: [128] },
        { node: "fc2", parameter: "fc2.weight", checkpoint_shape: [10, 64], graph_shape: [10, 128] },
      ],
      new: [{ node: "bn", parameter: "bn.weight", shape: [8] }],
      unused: [{ node: "drop", parameter: "drop.scale", shape: [1] }],
      problems: [],
    });
    expect(view.loaded).toBe(3);
    expect(view.exact).toBe(false);
    expect(view.nodes.map((n) => n.node)).toEqual(["fc1", "fc2", "bn", "drop"]);
    expect(view.nodes[0].rows).toEqual([
      { parameter: "weight", kind: "mismatched", text: "checkpoint [64, 256] → graph [128, 256]: initialised" },
      { parameter: "bias", kind: "mismatched", text: "checkpoint [64] → graph [128]: initialised" },
    ]);
    expect(view.nodes[2].rows).toEqual([{ parameter: "weight", kind: "new", text: "new [8]: initialised" }]);
    expect(view.nodes[3].rows[0]).toMatchObject({ kind: "unused", text: "[1] in the checkpoint: not used" });
  });

  it("says when everything matches and reads the problems", () => {
    const view = planView({
      loaded: ["fc.weight"],
      mismatched: [],
      new: [],
      unused: [],
      problems: ["resume needs the same graph revision (run 3 trained revision 1)", { field: "checkpoint", message: "no checkpoint best" }],
    });
    expect(view.exact).toBe(true);
    expect(view.problems).toEqual(["resume needs the same graph revision (run 3 trained revision 1)", "checkpoint: no checkpoint best"]);
  });
});
