// The shared document and the canvas: the canvas a doc draws, and the doc content a canvas stands
// for, with the keys the doc already uses for its wires and outputs (the canvas names those its own way).
import type { GraphSpec } from "../../api/types";
import { UI_OUTPUT_NODES, docToSpec, specToDoc } from "../convert";
import { type CanvasDoc, OUTPUT_PREFIX, edgeId } from "../model";
import { splitRef } from "../refs";
import { type DocJson, edgeKey, edgesByTarget, inputOrders, jsonToSpec, sortedOutputs, specToJson } from "./doc";

export interface DerivedCanvas {
  canvas: CanvasDoc;
  spec: GraphSpec;
  /** Canvas edge id -> the doc key of that wire. */
  edgeKeys: Map<string, string>;
  /** Canvas output node id (out:1, …) -> the doc key of that output. */
  outputKeys: Map<string, string>;
  /** Input id -> its `order` in the doc (one the doc lacks: the next after those before it). */
  inputOrders: Map<string, number>;
}

/** The canvas the doc's content draws. */
export function jsonToCanvas(json: DocJson): DerivedCanvas {
  const spec = jsonToSpec(json);
  const canvas = specToDoc(spec);
  // The canvas draws every output node when the spec has their places, else one per wired output;
  // either way in the doc's order, as out:1, out:2, … (what the page and its tests know them by).
  const placed = Array.isArray((spec.ui as Record<string, unknown> | undefined)?.[UI_OUTPUT_NODES]);
  const wired = new Set(spec.outputs ?? []);
  const outputKeys = new Map(
    sortedOutputs(json.outputs)
      .filter(([, o]) => placed || (o.source !== null && wired.has(o.source)))
      .map(([k], i) => [`${OUTPUT_PREFIX}${i + 1}`, k]),
  );
  const edgeKeys = new Map<string, string>();
  for (const [target, wires] of edgesByTarget(json)) {
    wires.forEach(([key, w], slot) => edgeKeys.set(edgeId(splitRef(w.source).node, target, slot), key));
  }
  return { canvas, spec, edgeKeys, outputKeys, inputOrders: inputOrders(json.inputs) };
}

export interface CanvasKeys {
  /** Wire keys of the canvas last drawn from the doc. */
  edgeKeys: Map<string, string>;
  /** Output keys of the canvas last drawn from the doc. */
  outputKeys: Map<string, string>;
  /** Input orders of the canvas last drawn from the doc; an input the doc does not know yet gets max + 1. */
  inputOrders: Map<string, number>;
  /** A key for an output node the doc does not know yet. */
  newOutputKey: () => string;
}

/** The doc content a canvas stands for; `keys` says which doc keys its wires and outputs have. */
export function canvasToJson(canvas: CanvasDoc, keys: CanvasKeys, renamed: Map<string, string> = new Map()): DocJson {
  const spec = docToSpec(canvas);
  const outIds = canvas.nodes.filter((n) => n.type === "output").map((n) => n.id);
  const outputKey = (k: number): string => {
    const id = outIds[k];
    const known = keys.outputKeys.get(id);
    if (known) return known;
    if (!renamed.has(id)) renamed.set(id, keys.newOutputKey());
    return renamed.get(id)!;
  };
  const wireKey = (ref: string, target: string, slot: number): string => {
    const known = keys.edgeKeys.get(edgeId(splitRef(ref).node, target, slot));
    return known && known.startsWith(`${ref}->${target}:`) ? known : edgeKey(ref, target, slot);
  };
  let next = Math.max(-1, ...keys.inputOrders.values()) + 1;
  const added = new Map<string, number>();
  const inputOrder = (id: string): number => {
    const known = keys.inputOrders.get(id);
    if (known !== undefined) return known;
    if (!added.has(id)) added.set(id, next++);
    return added.get(id)!;
  };
  return specToJson(spec, { outputKey, edgeKey: wireKey, inputOrder });
}
