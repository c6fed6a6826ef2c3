import { describe, expect, it } from "vitest";
import type { GraphSpec } from "../api/types";
import { mergeSpecs, theirChangesUndone } from "./merge";

const base: GraphSpec = {
  version: 1,
  inputs: [{ id: "x", shape: [1, 28, 28] }],
  nodes: [
    { id: "conv2d_1", op: "Conv2d", inputs: ["x"], params: { out_channels: 8, kernel_size: 3 } },
    { id: "flat", op: "Flatten", inputs: ["conv2d_1"] },
    { id: "fc1", op: "Linear", inputs: ["flat"], params: { out_features: 10 } },
  ],
  outputs: ["fc1"],
  layout: { x: { x: 0, y: 0 }, conv2d_1: { x: 0, y: 100 } },
};

function edit(spec: GraphSpec, f: (s: GraphSpec) => void): GraphSpec {
  const copy = structuredClone(spec);
  f(copy);
  return copy;
}

const theirs = edit(base, (s) => {
  s.nodes![0].params!.out_channels = 12;
});

describe("theirChangesUndone", () => {
  it("names the teammate's change that saving the canvas as it is would revert", () => {
    const mine = edit(base, (s) => {
      s.nodes![2].params!.out_features = 3;
    });
    expect(theirChangesUndone(base, theirs, mine)).toEqual([{ path: "conv2d_1.out_channels", base: 8, theirs: 12, mine: 8 }]);
  });

  it("is empty when mine already has their change", () => {
    expect(theirChangesUndone(base, theirs, theirs)).toEqual([]);
  });

  it("names a node they added that mine does not have", () => {
    const added = edit(theirs, (s) => {
      s.nodes!.push({ id: "drop", op: "Dropout", inputs: ["fc1"], params: { p: 0.1 } });
    });
    const paths = theirChangesUndone(base, added, base).map((u) => u.path);
    expect(paths).toContain("drop (op)");
    expect(paths).toContain("drop.p");
  });
});

describe("mergeSpecs", () => {
  it("puts mine on top of theirs when the edits touch different parameters", () => {
    const mine = edit(base, (s) => {
      s.nodes![2].params!.out_features = 3;
      s.layout = { ...s.layout, fc1: { x: 5, y: 200 } };
    });
    const { spec, conflicts } = mergeSpecs(base, theirs, mine);
    expect(conflicts).toEqual([]);
    expect(spec!.nodes!.find((n) => n.id === "conv2d_1")!.params).toEqual({ out_channels: 12, kernel_size: 3 });
    expect(spec!.nodes!.find((n) => n.id === "fc1")!.params).toEqual({ out_features: 3 });
    expect(spec!.nodes!.map((n) => n.id)).toEqual(["conv2d_1", "flat", "fc1"]);
    expect(spec!.outputs).toEqual(["fc1"]);
    expect((spec!.layout as Record<string, unknown>).fc1).toEqual({ x: 5, y: 200 });
  });

  it("keeps both sides' new nodes, each after what it reads", () => {
    const mine = edit(base, (s) => {
      s.nodes!.splice(1, 0, { id: "act", op: "ReLU", inputs: ["conv2d_1"] });
      s.nodes![2].inputs = ["act"];
    });
    const theirsAdded = edit(theirs, (s) => {
      s.nodes!.push({ id: "drop", op: "Dropout", inputs: ["fc1"], params: { p: 0.1 } });
      s.outputs = ["drop"];
    });
    const { spec, conflicts } = mergeSpecs(base, theirsAdded, mine);
    expect(conflicts).toEqual([]);
    const ids = spec!.nodes!.map((n) => n.id);
    expect(ids.indexOf("act")).toBeLessThan(ids.indexOf("flat"));
    expect(spec!.nodes!.find((n) => n.id === "flat")!.inputs).toEqual(["act"]);
    expect(spec!.outputs).toEqual(["drop"]);
    expect(spec!.nodes!.find((n) => n.id === "conv2d_1")!.params!.out_channels).toBe(12);
  });

  it("refuses when both changed the same parameter differently", () => {
    const mine = edit(base, (s) => {
      s.nodes![0].params!.out_channels = 16;
    });
    const { spec, conflicts } = mergeSpecs(base, theirs, mine);
    expect(spec).toBeNull();
    expect(conflicts).toEqual([{ path: "conv2d_1.out_channels", base: 8, theirs: 12, mine: 16 }]);
  });

  it("agrees when both made the same change", () => {
    expect(mergeSpecs(base, theirs, theirs).conflicts).toEqual([]);
  });

  it("refuses when mine removed a node they changed", () => {
    const mine = edit(base, (s) => {
      s.nodes = s.nodes!.filter((n) => n.id !== "conv2d_1");
      s.nodes![0].inputs = ["x"];
    });
    const { spec, conflicts } = mergeSpecs(base, theirs, mine);
    expect(spec).toBeNull();
    expect(conflicts.map((c) => c.path)).toContain("conv2d_1.out_channels");
  });

  it("refuses when mine wires into a node they removed", () => {
    const theirsRemoved = edit(base, (s) => {
      s.nodes = s.nodes!.filter((n) => n.id !== "flat");
      s.nodes![1].inputs = ["conv2d_1"];
    });
    const mine = edit(base, (s) => {
      s.nodes!.push({ id: "side", op: "ReLU", inputs: ["flat"] });
    });
    const { spec, conflicts } = mergeSpecs(base, theirsRemoved, mine);
    expect(spec).toBeNull();
    expect(conflicts.map((c) => c.path)).toContain("side (inputs)");
  });
});
