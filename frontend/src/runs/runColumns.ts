// What GET /api/runs/columns/ names (the metric names, config paths and graph parameters of the
// team's runs) as the column picker's groups and the filter's field names (pure; tested in vitest).
import type { Schema } from "../api/types";

export type RunColumnsAnswer = Schema<"RunColumnsAnswer">;

export const NO_COLUMNS: RunColumnsAnswer = { metrics: [], best: [], config: [], nodes: [], sampled: 0, complete: true };

/** One group of the picker: its title and the keys (fields of the query language) it offers. */
export interface PickerGroup {
  id: "final" | "best" | "config" | "graph";
  title: string;
  keys: string[];
}

/** The answer's names as query-language fields, by group. */
export function pickerGroups(answer: RunColumnsAnswer): PickerGroup[] {
  return [
    { id: "final", title: "Final metrics", keys: answer.metrics.map((m) => `metrics.${m}`) },
    { id: "best", title: "Best checkpoint", keys: answer.best.map((m) => `best.${m}`) },
    { id: "config", title: "Config", keys: answer.config.map((c) => `config.${c}`) },
    { id: "graph", title: "Graph parameters", keys: [...answer.nodes] },
  ];
}

/** The groups narrowed to keys holding `text` (case-insensitive); a group with none is left out. */
export function narrowGroups(groups: readonly PickerGroup[], text: string): PickerGroup[] {
  const want = text.trim().toLowerCase();
  return groups
    .map((g) => ({ ...g, keys: want ? g.keys.filter((k) => k.toLowerCase().includes(want)) : g.keys }))
    .filter((g) => g.keys.length > 0);
}

/** The field names the filter completes: the answer's, in group order. */
export function fieldsOfColumns(answer: RunColumnsAnswer): string[] {
  return pickerGroups(answer).flatMap((g) => g.keys);
}

/** `keys` with `key` shown (appended) or hidden. */
export function toggleKey(keys: readonly string[], key: string, on: boolean): string[] {
  const rest = keys.filter((k) => k !== key);
  return on ? [...rest, key] : rest;
}
