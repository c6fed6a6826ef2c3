// The browser's spec <-> Y.Doc mapping against the server's (webapp/graphs/collab/doc.py): both read
// tests/data/collab_specs.json (written from the Python side) and must give the same document
// (`doc.toJSON()`) and the same derived spec, byte for byte once keys are sorted.
import { describe, expect, it } from "vitest";
import * as Y from "yjs";
import type { GraphSpec } from "../../api/types";
import { canonicalJson } from "../convert";
import { type DocJson, applySpecToYdoc, docJson, jsonToSpec, specToYdoc, ydocToSpec } from "./doc";

interface Case {
  name: string;
  spec: GraphSpec;
  doc: DocJson;
  derived: GraphSpec;
}

const fixture = import.meta.glob<Case[]>("../../../../tests/data/collab_specs.json", { eager: true, import: "default" });
const cases: Case[] = Object.values(fixture)[0] ?? [];

describe("shared doc mapping agrees with the server's", () => {
  it("has the shared fixture (tests/data/collab_specs.json, written by the server side)", () => {
    expect(cases.length).toBeGreaterThan(0);
  });

  for (const c of cases) {
    it(`${c.name}: spec -> doc is the server's doc`, () => {
      expect(canonicalJson(docJson(specToYdoc(c.spec)))).toBe(canonicalJson(c.doc));
    });
    it(`${c.name}: doc -> spec is the server's derived spec`, () => {
      expect(canonicalJson(jsonToSpec(c.doc))).toBe(canonicalJson(c.derived));
      expect(canonicalJson(ydocToSpec(specToYdoc(c.spec)))).toBe(canonicalJson(c.derived));
    });
    it(`${c.name}: applying the spec again changes nothing`, () => {
      const doc = specToYdoc(c.spec);
      let updates = 0;
      doc.on("update", () => updates++);
      applySpecToYdoc(doc, c.derived, "local");
      expect(updates).toBe(0);
    });
  }
});

describe("applySpecToYdoc", () => {
  const base: GraphSpec = {
    version: 1,
    inputs: [{ id: "x", shape: [4] }],
    nodes: [
      { id: "fc1", op: "Linear", params: { out_features: 8 }, inputs: ["x"] },
      { id: "act", op: "ReLU", inputs: ["fc1"] },
    ],
    outputs: ["act"],
    layout: { x: { x: 0, y: 0 }, fc1: { x: 0, y: 100 }, act: { x: 0, y: 200 } },
  };

  it("writes a changed param alone, never a whole node", () => {
    const doc = specToYdoc(base);
    const fc1 = (doc.getMap("nodes") as Y.Map<Y.Map<unknown>>).get("fc1")!;
    applySpecToYdoc(doc, { ...base, nodes: [{ ...base.nodes![0], params: { out_features: 16 } }, base.nodes![1]] }, "local");
    expect((doc.getMap("nodes") as Y.Map<Y.Map<unknown>>).get("fc1")).toBe(fc1);
    expect((fc1.get("params") as Y.Map<unknown>).get("out_features")).toBe(16);
  });

  it("does not bring back a node someone deleted meanwhile", () => {
    const a = specToYdoc(base);
    const b = new Y.Doc();
    Y.applyUpdate(b, Y.encodeStateAsUpdate(a));
    const stale = ydocToSpec(b);
    // a deletes act; b (not seeing it yet) sets a param of fc1 from a whole spec that still has act.
    a.transact(() => a.getMap("nodes").delete("act"));
    stale.nodes![0].params = { out_features: 3 };
    applySpecToYdoc(b, stale, "local");
    Y.applyUpdate(a, Y.encodeStateAsUpdate(b));
    Y.applyUpdate(b, Y.encodeStateAsUpdate(a));
    expect(ydocToSpec(a).nodes!.map((n) => n.id)).toEqual(["fc1"]);
    expect(canonicalJson(ydocToSpec(a))).toBe(canonicalJson(ydocToSpec(b)));
    expect(ydocToSpec(a).nodes![0].params).toEqual({ out_features: 3 });
  });

  it("keeps the inputs' order, ids not alphabetical, and orders one without `order` after, by id", () => {
    const spec: GraphSpec = { ...base, inputs: [{ id: "x", shape: [4] }, { id: "a_mask", shape: [4] }] };
    const doc = specToYdoc(spec);
    expect(ydocToSpec(doc).inputs.map((i) => i.id)).toEqual(["x", "a_mask"]);
    const copy = new Y.Doc();
    Y.applyUpdate(copy, Y.encodeStateAsUpdate(doc));
    expect(ydocToSpec(copy).inputs.map((i) => i.id)).toEqual(["x", "a_mask"]);
    const old = new Y.Map<unknown>();
    old.set("shape", [1]);
    doc.getMap("inputs").set("0_old", old);
    expect(ydocToSpec(doc).inputs.map((i) => i.id)).toEqual(["x", "a_mask", "0_old"]);
    // Restoring a spec with another order writes the new order.
    applySpecToYdoc(doc, { ...spec, inputs: [spec.inputs[1], spec.inputs[0]] }, "local");
    expect(ydocToSpec(doc).inputs.map((i) => i.id)).toEqual(["a_mask", "x"]);
  });

  it("rewires only the node whose inputs changed, and drops a deleted node's wires", () => {
    const doc = specToYdoc(base);
    applySpecToYdoc(doc, { ...base, nodes: [base.nodes![0]], outputs: ["fc1"] }, "local");
    expect(Object.keys(docJson(doc).edges)).toEqual(["x->fc1:0"]);
    expect(ydocToSpec(doc).outputs).toEqual(["fc1"]);
  });
});
