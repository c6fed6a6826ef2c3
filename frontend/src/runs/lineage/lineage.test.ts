import { describe, expect, it } from "vitest";
import { lineageHref, lineageLayout, type LineageNode, onCuda } from "./lineage";

const node = (id: string, kind: LineageNode["kind"], data: Record<string, unknown> = {}): LineageNode => ({
  id, kind, label: id, data,
});

describe("the lineage layout", () => {
  it("puts each node right of the nodes it came from, left to right", () => {
    const nodes = [
      node("alias:1:prod", "alias"),
      node("run:2", "run"),
      node("dataset:1", "dataset"),
      node("checkpoint:1:best", "checkpoint"),
      node("run:1", "run"),
      node("model_version:5", "model_version"),
    ];
    const edges = [
      { source: "dataset:1", target: "run:1" },
      { source: "run:1", target: "checkpoint:1:best" },
      { source: "checkpoint:1:best", target: "run:2" },
      { source: "dataset:1", target: "run:2" },
      { source: "run:2", target: "model_version:5" },
      { source: "model_version:5", target: "alias:1:prod" },
    ];
    const at = lineageLayout(nodes, edges);
    const x = (id: string) => at.get(id)!.x;
    expect(x("dataset:1")).toBeLessThan(x("run:1"));
    expect(x("run:1")).toBeLessThan(x("checkpoint:1:best"));
    expect(x("checkpoint:1:best")).toBeLessThan(x("run:2"));
    expect(x("run:2")).toBeLessThan(x("model_version:5"));
    expect(x("model_version:5")).toBeLessThan(x("alias:1:prod"));
    expect(at.size).toBe(6);
  });

  it("ignores edges to nodes it was not given and lays out lone nodes", () => {
    const at = lineageLayout([node("run:1", "run")], [{ source: "dataset:9", target: "run:1" }]);
    expect([...at.keys()]).toEqual(["run:1"]);
  });

  it("links each node to its page", () => {
    expect(lineageHref(node("run:3", "run", { run: 3 }))).toBe("/runs/3");
    expect(lineageHref(node("checkpoint:3:best", "checkpoint", { run: 3 }))).toBe("/runs/3");
    expect(lineageHref(node("model_version:4", "model_version", { model: 2 }))).toBe("/models/2");
    expect(lineageHref(node("alias:2:production", "alias", { model: 2 }))).toBe("/models/2");
    expect(lineageHref(node("dataset:1", "dataset", { dataset: 1 }))).toBe("/datasets");
  });
});

describe("which runs may differ on a repeat", () => {
  it("names CUDA runs: trained there, needing a GPU, or asking for cuda", () => {
    expect(onCuda({ device: "cuda:0", need: { kind: "any" }, config: {} })).toBe(true);
    expect(onCuda({ device: "", need: { kind: "gpu" }, config: {} })).toBe(true);
    expect(onCuda({ device: "", need: { kind: "any" }, config: { device: "cuda:1" } })).toBe(true);
    expect(onCuda({ device: "cpu", need: { kind: "cpu" }, config: { device: "cpu" } })).toBe(false);
  });
});
