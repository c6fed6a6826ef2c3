// The predict form from the dataset's columns: one field per feature column the run reads (its
// recipe's `features`, else the summary's feature columns), numbers as number boxes, categories
// as a choice of the categories seen in training (one-hot names "colour=red" of the summary's
// feature_names) or a text box when the vocabulary is not known here. Pure: tested in vitest.
import type { DatasetSummary } from "./types";

export interface PredictField {
  name: string;
  kind: "number" | "category";
  /** The categories seen in training, when known (one-hot encoded columns). */
  categories: string[];
}

/** The features a run reads: its recipe's `source.features` when set. */
function recipeFeatures(recipe: Record<string, unknown> | null | undefined): string[] | null {
  const source = recipe?.source as { features?: unknown } | undefined;
  const features = source?.features;
  return Array.isArray(features) && features.every((f) => typeof f === "string") && features.length ? features : null;
}

/** One field per feature column; [] when the data has no named columns (images, tensors). */
export function predictFields(summary: DatasetSummary | null, recipe?: Record<string, unknown> | null): PredictField[] {
  const columns = summary?.columns ?? [];
  if (!columns.length) return [];
  const wanted = recipeFeatures(recipe) ?? columns.filter((c) => (c.role ?? "feature") === "feature").map((c) => c.name);
  const byName = new Map(columns.map((c) => [c.name, c]));
  const names = summary?.feature_names ?? [];
  return wanted
    .filter((name) => byName.has(name))
    .map((name) => {
      const col = byName.get(name)!;
      const numeric = col.kind === "numeric" || col.kind === "number" || col.kind === "integer" || col.kind === "float";
      const prefix = `${name}=`;
      const categories = names.filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length));
      return { name, kind: numeric ? "number" : "category", categories } satisfies PredictField;
    });
}

/**
 * The JSON row the predict endpoint takes: numbers as numbers, categories as strings, an empty
 * box as null (a blank cell: the pipeline fills it as in training).
 */
export function rowOf(fields: PredictField[], values: Record<string, string>): Record<string, string | number | null> {
  const row: Record<string, string | number | null> = {};
  for (const f of fields) {
    const text = (values[f.name] ?? "").trim();
    if (text === "") row[f.name] = null;
    else if (f.kind === "number" && Number.isFinite(Number(text))) row[f.name] = Number(text);
    else row[f.name] = text;
  }
  return row;
}

/** A row the user already has (a test sample's raw values) as the form's text values. */
export function valuesOf(fields: PredictField[], row: Record<string, unknown>): Record<string, string> {
  const values: Record<string, string> = {};
  for (const f of fields) {
    const v = row[f.name];
    values[f.name] = v === null || v === undefined ? "" : String(v);
  }
  return values;
}

/**
 * The server's per-field messages (`input.<column>`, `input`, `image`, `index`) as the form's:
 * column name -> message, other fields under their own name.
 */
export function fieldErrors(fields: Record<string, unknown> | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(fields ?? {})) {
    const name = key.startsWith("input.") ? key.slice("input.".length) : key;
    const text = (Array.isArray(value) ? value : [value]).map(String).join(" ");
    out[name] = out[name] ? `${out[name]} ${text}` : text;
  }
  return out;
}
