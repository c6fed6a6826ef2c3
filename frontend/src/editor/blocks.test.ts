import { describe, expect, it } from "vitest";
import type { GraphSpec, OpSchema } from "../api/types";
import { bindParams, blockToSpec, innerPath, specToBlock } from "./blockBody";
import { newerVersion } from "./blockLibrary";
import {
  BlockError,
  type BlockGraphSpec,
  type BlockSpec,
  blockOpSchema,
  exposableParams,
  makeBlock,
  parseBlockRef,
  placeInstance,
  upgradeInstances,
} from "./blocks";
import { connectionProblem } from "./connect";
import { docToSpec, specToDoc } from "./convert";

// A small conv network on digits: conv1 -> bn1 -> act1 is the block to make.
const CNN: GraphSpec = {
  version: 1,
  inputs: [{ id: "x", shape: [1, 8, 8], dtype: "float32" }],
  nodes: [
    { id: "stem", op: "Conv2d", params: { out_channels: 8, kernel_size: 3, padding: 1 }, inputs: ["x"] },
    { id: "conv1", op: "Conv2d", params: { out_channels: 8, kernel_size: 3, padding: 1 }, inputs: ["stem"] },
    { id: "bn1", op: "BatchNorm2d", inputs: ["conv1"] },
    { id: "act1", op: "ReLU", inputs: ["bn1"] },
    { id: "flat", op: "Flatten", inputs: ["act1"] },
    { id: "fc", op: "Linear", params: { out_features: 10 }, inputs: ["flat"] },
  ],
  outputs: ["fc"],
  layout: { x: { x: 0, y: 0 }, stem: { x: 0, y: 100 }, conv1: { x: 0, y: 200 }, bn1: { x: 0, y: 300 }, act1: { x: 20, y: 400 }, flat: { x: 0, y: 500 }, fc: { x: 0, y: 600 } },
};

const CATALOG = new Map<string, OpSchema>(
  [
    { name: "Conv2d", params: [{ name: "out_channels", type: "int", required: true, min: 1 }, { name: "kernel_size", type: "int_or_tuple", default: 1 }, { name: "padding", type: "int_or_tuple", default: 0 }] },
    { name: "BatchNorm2d", params: [{ name: "eps", type: "float", default: 1e-5 }] },
    { name: "ReLU", params: [] },
  ].map((o) => [o.name, { category: "x", help: "", arity: { min: 1, max: 1 }, input_dtypes: [], input: "any", inferred: [], kind: "module", ...o } as OpSchema]),
);

const BLOCK = new Set(["conv1", "bn1", "act1"]);

function made() {
  return makeBlock(specToDoc(CNN), BLOCK, { name: "ConvBlock", description: "conv, norm, relu", expose: { channels: [["conv1", "out_channels"]] } }, CATALOG);
}

describe("makeBlock", () => {
  it("replaces the selection by one instance wired like the selection was", () => {
    const { block, doc, instance } = made();
    expect(instance).toBe("convblock_1");
    expect(block).toMatchObject({
      name: "ConvBlock",
      version: 1,
      params: [{ name: "channels", default: 8 }],
      inputs: [{ id: "x" }],
      outputs: ["act1"],
    });
    expect(block.nodes.map((n) => [n.id, n.inputs])).toEqual([
      ["conv1", ["x"]],
      ["bn1", ["conv1"]],
      ["act1", ["bn1"]],
    ]);
    expect(block.nodes[0].params).toEqual({ out_channels: { $param: "channels" }, kernel_size: 3, padding: 1 });

    const spec = docToSpec(doc) as BlockGraphSpec;
    expect(spec.version).toBe(2);
    expect(spec.blocks).toEqual([block]);
    expect(spec.nodes!.map((n) => [n.id, n.op, n.inputs])).toEqual([
      ["stem", "Conv2d", ["x"]],
      ["convblock_1", "ConvBlock@1", ["stem"]],
      ["flat", "Flatten", ["convblock_1"]],
      ["fc", "Linear", ["flat"]],
    ]);
    expect(spec.nodes![1].params).toEqual({ channels: 8 });
  });

  it("binds several inner params under one name, and names inputs and outputs in order", () => {
    const spec: GraphSpec = {
      version: 1,
      inputs: [{ id: "a", shape: [4] }, { id: "b", shape: [4] }],
      nodes: [
        { id: "fa", op: "Linear", params: { out_features: 6 }, inputs: ["a"] },
        { id: "fb", op: "Linear", params: { out_features: 6 }, inputs: ["b"] },
        { id: "sum", op: "Add", inputs: ["fa", "fb"] },
        { id: "head", op: "Linear", params: { out_features: 2 }, inputs: ["sum"] },
      ],
      outputs: ["head", "fa"],
    };
    const { block, doc } = makeBlock(specToDoc(spec), new Set(["fa", "fb", "sum"]), { name: "Pair", expose: { width: [["fa", "out_features"], ["fb", "out_features"]] } });
    expect(block.inputs).toEqual([{ id: "x1" }, { id: "x2" }]);
    expect(block.outputs).toEqual(["fa", "sum"]);
    expect(block.nodes.find((n) => n.id === "fb")!.params).toEqual({ out_features: { $param: "width" } });
    expect(block.params).toEqual([{ name: "width", default: 6, description: "fa.out_features, fb.out_features" }]);
    const out = docToSpec(doc);
    expect(out.nodes!.map((n) => [n.id, n.inputs])).toEqual([
      ["pair_1", ["a", "b"]],
      ["head", ["pair_1:1"]],
    ]);
    expect(out.outputs).toEqual(["head", "pair_1:0"]);
  });

  it("refuses what cannot be a block, saying why", () => {
    const doc = specToDoc(CNN);
    expect(() => makeBlock(doc, new Set(["conv1", "act1"]), { name: "Gap", expose: {} })).toThrow(/bn1 lies between selected nodes/);
    expect(() => makeBlock(doc, new Set(["x"]), { name: "Empty", expose: {} })).toThrow(BlockError);
    expect(() => makeBlock(doc, BLOCK, { name: "2fast", expose: {} })).toThrow(/not a block name/);
    expect(() => makeBlock(doc, BLOCK, { name: "B", expose: { "bad name": [["conv1", "padding"]] } })).toThrow(/not a parameter name/);
  });

  it("lists the selected nodes' params with their values (defaults where unset)", () => {
    const rows = exposableParams(specToDoc(CNN), BLOCK, CATALOG);
    expect(rows).toContainEqual({ node: "conv1", param: "out_channels", value: 8 });
    expect(rows).toContainEqual({ node: "bn1", param: "eps", value: 1e-5 });
    expect(rows.some((r) => r.node === "stem")).toBe(false);
  });
});

describe("placing, ports and upgrades", () => {
  it("places an instance with the defaults and copies the definition and its dependencies once", () => {
    const { block, doc } = made();
    const inner: BlockSpec = { name: "Inner", version: 1, params: [], inputs: [{ id: "x" }], nodes: [{ id: "r", op: "ReLU", inputs: ["x"] }], outputs: ["r"] };
    const outer: BlockSpec = { ...block, name: "Outer", nodes: [...block.nodes, { id: "in1", op: "Inner@1", inputs: ["act1"] }], outputs: ["in1"] };
    let d = placeInstance(doc, block, [], { x: 300, y: 200 }).doc;
    d = placeInstance(d, outer, [inner], { x: 300, y: 400 }).doc;
    const spec = docToSpec(d) as BlockGraphSpec;
    const placed = spec.nodes!.filter((n) => parseBlockRef(n.op));
    expect(placed.map((n) => [n.id, n.op, n.params])).toEqual([
      ["convblock_1", "ConvBlock@1", { channels: 8 }],
      ["convblock_2", "ConvBlock@1", { channels: 8 }],
      ["outer_1", "Outer@1", { channels: 8 }],
    ]);
    expect(spec.blocks!.map((b) => `${b.name}@${b.version}`)).toEqual(["ConvBlock@1", "Outer@1", "Inner@1"]);
  });

  it("nests: a block made of a selection with an instance in it uses that block's definition", () => {
    const { doc } = made();
    const outer = makeBlock(doc, new Set(["convblock_1", "flat"]), { name: "Stage", expose: { width: [["convblock_1", "channels"]] } }, CATALOG);
    expect(outer.block.nodes.map((n) => [n.id, n.op, n.params])).toEqual([
      ["convblock_1", "ConvBlock@1", { channels: { $param: "width" } }],
      ["flat", "Flatten", undefined],
    ]);
    const spec = docToSpec(outer.doc) as BlockGraphSpec;
    expect(spec.nodes!.map((n) => n.op)).toEqual(["Conv2d", "Stage@1", "Linear"]);
    // The inner definition stays: the outer one uses it.
    expect(spec.blocks!.map((b) => `${b.name}@${b.version}`)).toEqual(["ConvBlock@1", "Stage@1"]);
  });

  it("gives an instance one input per block input and output ports when it returns several", () => {
    const { block, doc } = made();
    const two: BlockSpec = { ...block, name: "Two", inputs: [{ id: "x1" }, { id: "x2" }], outputs: ["bn1", "act1"] };
    const schema = blockOpSchema(two, CATALOG);
    expect(schema).toMatchObject({ name: "Two@1", category: "Team blocks", arity: { min: 2, max: 2 }, multi_output: true });
    // The exposed param takes the form of the catalog param it is bound to.
    expect(schema.params[0]).toMatchObject({ name: "channels", type: "int", min: 1, default: 8 });
    const ops = new Map([...CATALOG, ["Two@1", schema]]);
    const d = placeInstance(doc, two, [], { x: 0, y: 0 }).doc;
    expect(connectionProblem(d, ops, { source: "two_1", sourceHandle: "out", target: "flat", targetHandle: "in0" })).toMatch(/several outputs/);
    expect(connectionProblem(d, ops, { source: "stem", sourceHandle: "out", target: "two_1", targetHandle: "in2" })).toMatch(/takes 2 inputs/);
  });

  it("upgrades instances to a newer version, keeping values and wires that still fit", () => {
    const { block, doc } = made();
    const v2: BlockSpec = { ...block, version: 2, params: [...block.params, { name: "eps", default: 0.001 }] };
    const up = upgradeInstances(doc, v2, []);
    const spec = docToSpec(up) as BlockGraphSpec;
    const inst = spec.nodes!.find((n) => n.id === "convblock_1")!;
    expect(inst.op).toBe("ConvBlock@2");
    expect(inst.params).toEqual({ channels: 8, eps: 0.001 });
    expect(inst.inputs).toEqual(["stem"]);
    expect(spec.nodes!.find((n) => n.id === "flat")!.inputs).toEqual(["convblock_1"]);
    // The old version is no longer used: it leaves the spec.
    expect(spec.blocks!.map((b) => b.version)).toEqual([2]);
    expect(newerVersion([{ id: 3, team: 1, name: "ConvBlock", description: "", latest_version: 2, versions: [2, 1] }], "ConvBlock@1")).toMatchObject({ version: 2 });
    expect(newerVersion([{ id: 3, team: 1, name: "ConvBlock", description: "", latest_version: 2, versions: [2, 1] }], "ConvBlock@2")).toBeNull();
  });

  it("goes back to a version 1 spec when the last instance is deleted", () => {
    const { doc } = made();
    const gone = { ...doc, nodes: doc.nodes.filter((n) => n.id !== "convblock_1") };
    const spec = docToSpec(gone) as BlockGraphSpec;
    expect(spec.version).toBe(1);
    expect(spec.blocks).toBeUndefined();
  });
});

describe("editing a block's body", () => {
  it("opens the body as a graph with the instance's input shapes and saves it back", () => {
    const { block } = made();
    const body = blockToSpec(block, [[8, 8, 8]], []);
    expect(body.inputs).toEqual([{ id: "x", shape: [8, 8, 8], dtype: "float32" }]);
    expect(body.outputs).toEqual(["act1"]);
    // The validator sees values, the canvas keeps the references.
    expect(bindParams(body, block, { channels: 16 }).nodes![0].params!.out_channels).toBe(16);
    expect(bindParams(body, block, {}).nodes![0].params!.out_channels).toBe(8);
    const round = docToSpec(specToDoc(body as GraphSpec)) as BlockGraphSpec;
    const back = specToBlock(round, block);
    expect(back.nodes).toEqual(block.nodes);
    expect(back.inputs).toEqual(block.inputs);
    expect(back.outputs).toEqual(block.outputs);
  });

  it("names the inner node of a problem inside an instance", () => {
    expect(innerPath({ path: ["res1", "conv1"] })).toBe("conv1");
    expect(innerPath({ path: ["stage1", "res1", "conv1"] })).toBe("res1 › conv1");
    expect(innerPath({})).toBeNull();
  });
});
