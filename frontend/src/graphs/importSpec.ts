// A spec file from `python -m engine import` (or `netloom graphs pull`) turned into a new graph's
// name and spec; the server validates the spec itself and names the node at fault.
import type { GraphSpec } from "../api/types";

export interface ImportedSpec {
  name: string;
  spec: GraphSpec;
}

/** The graph name and spec of a chosen file; an Error that says what is wrong otherwise. */
export function importedSpec(fileName: string, text: string, typedName: string): ImportedSpec {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error(`${fileName} is not JSON: choose the spec file the import command wrote (spec.json).`);
  }
  // `netloom graphs pull` writes the revision ({spec, ...}); the import command the spec itself.
  const spec = data && typeof data === "object" && "spec" in data && !("nodes" in data) ? (data as { spec: unknown }).spec : data;
  if (!spec || typeof spec !== "object" || !Array.isArray((spec as { nodes?: unknown }).nodes)) {
    throw new Error(`${fileName} is not a graph spec: it has no "nodes" list.`);
  }
  const stem = fileName.replace(/\.json$/i, "").replace(/[._-]+/g, " ").trim();
  return { name: typedName.trim() || stem || "imported graph", spec: spec as GraphSpec };
}
