// A spec file from `python -m engine import` (or `netloom graphs pull`) turned into a new graph's
// name and spec; the server validates the spec itself and names the node at fault. With the
// weights it wrote (--weights-out), the graph's revision 1 gets a first checkpoint to fine-tune from.
import { type UploadProgress, uploadForm } from "../api/client";
import type { GraphSpec, GraphSummary, Schema } from "../api/types";

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

/** Why a chosen weights file cannot be sent (null: it can): safetensors only, never a pickle. */
export function weightsProblem(file: { name: string; size: number } | null | undefined): string | null {
  if (!file) return null;
  if (/\.(pt|pth|bin|ckpt|pkl)$/i.test(file.name)) {
    return `${file.name} looks like a torch.save file (pickle), which the server never reads: save the state dict with safetensors (python -m engine import ... --weights-out weights.safetensors).`;
  }
  if (!/\.safetensors$/i.test(file.name)) return `${file.name} is not a .safetensors file.`;
  if (file.size === 0) return `${file.name} is empty.`;
  return null;
}

/** The run that holds imported weights as its checkpoint `imported`. */
export interface ImportedRun {
  id: number;
  name: string;
}

/** POST a weights file as the first checkpoint of a graph revision; the run that holds it. */
export async function importWeights(
  graphId: number,
  revision: number,
  file: File,
  onProgress: (p: UploadProgress) => void = () => undefined,
): Promise<ImportedRun> {
  const form = new FormData();
  form.append("file", file, file.name);
  const { data } = await uploadForm<ImportedRun>(`/api/graphs/${graphId}/revisions/${revision}/weights/`, form, onProgress);
  return data;
}

/** POST /api/graphs/import/'s answer: the new graph, and the run holding its weights (or null). */
export type GraphImportAnswer = Schema<"GraphImportAnswer">;

/**
 * A spec (and its weights, when chosen) as a new graph in one request: weights the server refuses
 * leave no graph behind, so trying again after fixing the file never makes a second graph.
 */
export async function importGraph(
  team: number,
  name: string,
  spec: GraphSpec,
  weights: File | null,
  onProgress: (p: UploadProgress) => void = () => undefined,
): Promise<GraphImportAnswer> {
  const form = new FormData();
  form.append("team", String(team));
  form.append("name", name);
  form.append("spec", JSON.stringify(spec));
  if (weights) form.append("file", weights, weights.name);
  const { data } = await uploadForm<GraphImportAnswer>("/api/graphs/import/", form, onProgress);
  return data;
}

/** The team's graph already called `name` (case and spaces aside), or null. */
export function sameName(graphs: readonly Pick<GraphSummary, "id" | "name">[], name: string): Pick<GraphSummary, "id" | "name"> | null {
  const wanted = name.trim().toLowerCase();
  if (!wanted) return null;
  return graphs.find((g) => g.name.trim().toLowerCase() === wanted) ?? null;
}

/** "Sending weights.safetensors… 40%" while an upload is under way. */
export function sendingLine(file: string, p: UploadProgress): string {
  return `Sending ${file}… ${p.total ? Math.round((100 * p.loaded) / p.total) : 0}%`;
}
