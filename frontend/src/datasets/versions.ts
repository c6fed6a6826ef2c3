// A dataset's versions: the API calls and what the browser shows of a version and of a diff.
import { apiRequest, uploadForm, type UploadProgress } from "../api/client";
import type { Schema } from "../api/types";

export type DatasetVersion = Schema<"DatasetVersion">;

/** The answer of GET /api/datasets/<id>/versions/diff/ (webapp/datasets/selectors.py, engine/data/diff.py). */
export interface VersionDiff {
  from: { number: number; digest: string };
  to: { number: number; digest: string };
  same_bytes: boolean;
  kind: "table" | "archive" | "tensors" | string;
  key?: string | null;
  rows?: { before: number; after: number; added: number; removed: number; changed: number | null; unchanged: number };
  files?: { before: number; after: number; added: number; removed: number; changed: number; unchanged: number };
  examples?: { added: unknown[]; removed: unknown[]; changed: unknown[] };
  columns?: { added: string[]; removed: string[]; retyped: { column: string; before: string; after: string }[] };
  statistics?: Record<string, { before: ColumnStats | null; after: ColumnStats | null }>;
  class_balance?: { column: string | null; before: Record<string, number> | null; after: Record<string, number> | null };
}

export interface ColumnStats {
  type: string;
  count: number;
  missing: number;
  distinct: number | null;
  mean?: number;
  std?: number;
}

export const versionsApi = {
  list: (dataset: number) => apiRequest<DatasetVersion[]>("GET", `/api/datasets/${dataset}/versions/`),
  upload: (
    dataset: number,
    file: File,
    onProgress: (p: UploadProgress) => void,
    options?: Record<string, unknown>,
    signal?: AbortSignal,
  ) => {
    const form = new FormData();
    form.append("file", file);
    if (options) form.append("options", JSON.stringify(options));
    return uploadForm<DatasetVersion>(`/api/datasets/${dataset}/versions/`, form, onProgress, signal);
  },
  remove: (dataset: number, number: number) => apiRequest<void>("DELETE", `/api/datasets/${dataset}/versions/${number}/`),
  diff: (dataset: number, from: number, to: number, key?: string) =>
    apiRequest<VersionDiff>(
      "GET",
      `/api/datasets/${dataset}/versions/diff/?from=${from}&to=${to}${key ? `&key=${encodeURIComponent(key)}` : ""}`,
    ),
};

/** "v2 · 3f2a9c1b0d4e": a version as one short label. */
export function versionLabel(v: { number: number; digest: string }): string {
  return v.digest ? `v${v.number} · ${v.digest.slice(0, 12)}` : `v${v.number}`;
}

/** The headline of a diff: "5 rows removed", "3 added, 1 removed, 2 changed (by id)", "no change". */
export function diffHeadline(d: VersionDiff): string {
  const counts = d.rows ?? d.files;
  if (!counts) return d.same_bytes ? "the same bytes" : "the bytes differ";
  const unit = d.rows ? "row" : "file";
  const parts: string[] = [];
  const plural = (n: number) => `${n} ${unit}${n === 1 ? "" : "s"}`;
  if (counts.added) parts.push(`${plural(counts.added)} added`);
  if (counts.removed) parts.push(`${plural(counts.removed)} removed`);
  if (counts.changed) parts.push(`${plural(counts.changed)} changed${d.key ? ` (by ${d.key})` : ""}`);
  return parts.length ? parts.join(", ") : `no ${unit} changed`;
}

/** One line per column whose statistics moved: "age: mean 31.2 → 33.0, count 60 → 55". */
export function statisticLines(d: VersionDiff): string[] {
  const lines: string[] = [];
  const fmt = (n: number | undefined) => (n === undefined ? "–" : Number.isInteger(n) ? String(n) : n.toPrecision(4));
  for (const [name, { before, after }] of Object.entries(d.statistics ?? {})) {
    if (!before || !after) continue;
    const moved: string[] = [];
    if (before.count !== after.count) moved.push(`count ${before.count} → ${after.count}`);
    if (before.missing !== after.missing) moved.push(`missing ${before.missing} → ${after.missing}`);
    if (before.mean !== undefined && after.mean !== undefined && fmt(before.mean) !== fmt(after.mean))
      moved.push(`mean ${fmt(before.mean)} → ${fmt(after.mean)}`);
    if (before.std !== undefined && after.std !== undefined && fmt(before.std) !== fmt(after.std))
      moved.push(`std ${fmt(before.std)} → ${fmt(after.std)}`);
    if (before.distinct !== after.distinct) moved.push(`distinct ${before.distinct ?? "many"} → ${after.distinct ?? "many"}`);
    if (moved.length) lines.push(`${name}: ${moved.join(", ")}`);
  }
  return lines;
}

/** Classes with their counts before and after, every class either side named once. */
export function balanceRows(d: VersionDiff): { name: string; before: number; after: number }[] {
  const before = d.class_balance?.before ?? {};
  const after = d.class_balance?.after ?? {};
  return [...new Set([...Object.keys(before), ...Object.keys(after)])].map((name) => ({
    name,
    before: before[name] ?? 0,
    after: after[name] ?? 0,
  }));
}
