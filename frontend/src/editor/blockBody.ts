// A block's body edited as a graph of its own: the body as a spec (block inputs as graph inputs),
// back into a definition, bound to an instance's values for the validator, and where a problem
// inside an instance sits.
import type { NodeSpec } from "../api/types";
import { type BlockGraphSpec, type BlockSpec, isParamRef } from "./blocks";
import { type CanvasDoc, OUTPUT_PREFIX } from "./model";

/**
 * The block's body as a graph spec: block inputs become graph inputs (with the shapes an instance
 * receives, when known), its outputs the graph's outputs; the blocks it uses come along.
 */
export function blockToSpec(block: BlockSpec, inputShapes: (number[] | null)[], dependencies: BlockSpec[]): BlockGraphSpec {
  const spec: BlockGraphSpec = {
    version: dependencies.length ? 2 : 1,
    inputs: block.inputs.map((i, k) => ({ id: i.id, shape: inputShapes[k] ?? [1], dtype: "float32" })),
    nodes: structuredClone(block.nodes),
    outputs: [...block.outputs],
    layout: structuredClone(block.layout ?? {}),
  };
  if (dependencies.length) spec.blocks = structuredClone(dependencies);
  return spec;
}

/** The body graph back into a definition of the same name (its version is the library's to give). */
export function specToBlock(spec: BlockGraphSpec, like: BlockSpec): BlockSpec {
  return {
    ...like,
    inputs: spec.inputs.map((i) => ({ id: i.id })),
    nodes: structuredClone(spec.nodes ?? []),
    outputs: [...(spec.outputs ?? [])],
    layout: structuredClone((spec.layout as Record<string, unknown>) ?? {}),
  };
}

/** The body with every `{"$param": p}` replaced by `values[p]` (or the default): what the validator can check on its own. */
export function bindParams<T extends { nodes?: NodeSpec[] }>(spec: T, block: BlockSpec, values: Record<string, unknown>): T {
  const value = (name: string) => (name in values ? values[name] : block.params.find((p) => p.name === name)?.default);
  return {
    ...spec,
    nodes: (spec.nodes ?? []).map((n) =>
      n.params ? { ...n, params: Object.fromEntries(Object.entries(n.params).map(([k, v]) => [k, isParamRef(v) ? value(v.$param) : v])) } : n,
    ),
  };
}

/** Where a problem inside an instance sits: `["res1", "conv1"]` reads "conv1" (nested: "inner › conv1"). */
export function innerPath(problem: { path?: unknown }): string | null {
  const path = problem.path;
  if (!Array.isArray(path) || path.length < 2) return null;
  return path.slice(1).map(String).join(" › ");
}

/** Output nodes of a body doc sorted by their number, so "out:1" stays the block's first output. */
export function outputNodeOrder(doc: CanvasDoc): string[] {
  return doc.nodes
    .filter((n) => n.id.startsWith(OUTPUT_PREFIX))
    .map((n) => n.id)
    .sort((a, b) => Number(a.slice(OUTPUT_PREFIX.length)) - Number(b.slice(OUTPUT_PREFIX.length)));
}
