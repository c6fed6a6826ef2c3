// Tabular attributions over the user's own columns: the encoded features ("colour=red" one-hot
// slots, "age (missing)" indicators) summed back into the column they came from, the per-feature
// parts kept for the hover detail. Pure: tested in vitest.

export interface ColumnAttribution {
  column: string;
  /** The sum of the column's features' attributions. */
  total: number;
  /** Each encoded feature of the column and its attribution (one entry for a plain number). */
  parts: { feature: string; value: number }[];
}

/** The column an encoded feature belongs to, given the dataset's column names. */
export function columnOf(feature: string, columns: ReadonlySet<string>): string {
  if (columns.has(feature)) return feature;
  const missing = / \(missing\)$/.exec(feature);
  if (missing) {
    const base = feature.slice(0, missing.index);
    if (columns.has(base) || !columns.size) return base;
  }
  // "colour=red": the longest prefix before a "=" that is a column (a name may hold "=").
  for (let i = feature.lastIndexOf("="); i > 0; i = feature.lastIndexOf("=", i - 1)) {
    const base = feature.slice(0, i);
    if (columns.has(base)) return base;
  }
  if (!columns.size && feature.includes("=")) return feature.slice(0, feature.indexOf("="));
  return feature;
}

/**
 * Attributions per original column, in the order the columns first appear; `columns` are the
 * dataset's column names (empty: guessed from the "name=category" pattern).
 */
export function attributionsByColumn(
  featureNames: readonly string[],
  attributions: readonly number[],
  columns: Iterable<string> = [],
): ColumnAttribution[] {
  const known = new Set(columns);
  const byColumn = new Map<string, ColumnAttribution>();
  featureNames.forEach((feature, i) => {
    const value = Number(attributions[i] ?? 0);
    const column = columnOf(feature, known);
    let entry = byColumn.get(column);
    if (!entry) {
      entry = { column, total: 0, parts: [] };
      byColumn.set(column, entry);
    }
    entry.total += value;
    entry.parts.push({ feature, value });
  });
  return [...byColumn.values()];
}

/** The attributions of one table sample as a flat list (the engine sends shape [features] or [1, features]). */
export function flatAttributions(value: unknown): number[] {
  const out: number[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (typeof v === "number") out.push(v);
  };
  walk(value);
  return out;
}
