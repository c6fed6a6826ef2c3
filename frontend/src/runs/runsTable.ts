// The runs table's logic (pure; tested in vitest): a run's name, the configuration fields that
// differ among the listed runs (dotted paths), the metric columns from `summary`, the sort a header
// click asks for (the server sorts: runsQuery.ts) and the compare selection.
import type { Schema } from "../api/types";
import type { Run } from "./types";

/** `summary` of the run JSON: final values and the best value of each stored series. */
export type RunSummary = Schema<"RunSummary">;

/** A run as the list gives it (the run JSON; a row of the table). */
export type RunRow = Run;

/** Comparing needs two runs; the server compares at most a hundred at once. */
export const COMPARE_MIN = 2;
export const COMPARE_MAX = 100;

export function canCompare(selected: number): boolean {
  return selected >= COMPARE_MIN && selected <= COMPARE_MAX;
}

/** The run's own name, or "run <id>". */
export function runName(run: { id: number; name?: string | null }): string {
  const name = run.name?.trim();
  return name ? name : `run ${run.id}`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A nested configuration as dotted paths to leaf values ({optimizer: {lr: 0.1}} -> {"optimizer.lr":
 * 0.1}). Lists are leaves (a list of class weights is one value); an empty object is a leaf too.
 */
export function flattenConfig(config: unknown, prefix = ""): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!isPlainObject(config)) {
    if (prefix) out[prefix] = config;
    return out;
  }
  const entries = Object.entries(config);
  if (entries.length === 0 && prefix) out[prefix] = config;
  for (const [key, value] of entries) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (isPlainObject(value) && Object.keys(value).length > 0) Object.assign(out, flattenConfig(value, path));
    else out[path] = value;
  }
  return out;
}

/**
 * The dotted paths whose value is not the same among the configurations that have it, sorted. A run
 * without the field (imported weights have no config; an older run lacks a newer field) does not
 * count as different: only two values that are really unlike make a column.
 */
export function differingFields(configs: readonly unknown[]): string[] {
  return differingPaths(configs.map((c) => flattenConfig(c)));
}

/** The keys whose defined values are not all the same across `flat` (each a flattened record), sorted. */
export function differingPaths(flat: readonly Record<string, unknown>[]): string[] {
  if (flat.length < 2) return [];
  const paths = new Set<string>();
  for (const f of flat) for (const p of Object.keys(f)) paths.add(p);
  return [...paths].filter((path) => new Set(flat.map((f) => valueAt(f, path)).filter((v) => v !== undefined)).size > 1).sort();
}

/**
 * A flat record's value at `path` as a comparable key: the value itself, or an ancestor's when that
 * is a leaf (`best: null` says `best.metric` is unset too); undefined when the record lacks it.
 */
function valueAt(flat: Record<string, unknown>, path: string): string | undefined {
  if (flat[path] !== undefined) return JSON.stringify(flat[path]);
  const parts = path.split(".");
  for (let i = parts.length - 1; i > 0; i--) {
    const up = flat[parts.slice(0, i).join(".")];
    if (up === null || (typeof up === "object" && up !== null && Object.keys(up).length === 0)) return "null";
  }
  return undefined;
}

/** The graph revision a run trained, as a key of the revisions fetched for the table. */
export function revisionKey(run: Pick<RunRow, "graph" | "revision">): string {
  return `${run.graph}:${run.revision}`;
}

/** The distinct graph revisions of the listed runs (each is fetched once). */
export function distinctRevisions(runs: readonly Pick<RunRow, "graph" | "revision">[]): { graph: number; revision: number }[] {
  const seen = new Map<string, { graph: number; revision: number }>();
  for (const r of runs) if (!seen.has(revisionKey(r))) seen.set(revisionKey(r), { graph: r.graph, revision: r.revision });
  return [...seen.values()];
}

interface SpecLike {
  inputs?: { id: string; shape?: unknown }[];
  nodes?: { id: string; op?: string; params?: Record<string, unknown> }[];
}

/**
 * A graph spec's parameters as flat keys: `nodes.fc1.out_features`, `nodes.fc1.op`,
 * `inputs.x.shape` (wiring and layout are left out: a column says a value, not a structure).
 */
export function flattenGraph(spec: SpecLike | null | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const inp of spec?.inputs ?? []) out[`inputs.${inp.id}.shape`] = inp.shape;
  for (const n of spec?.nodes ?? []) {
    out[`nodes.${n.id}.op`] = n.op;
    for (const [k, v] of Object.entries(n.params ?? {})) out[`nodes.${n.id}.${k}`] = v;
  }
  return out;
}

/** A configuration value as a cell reads (lists and objects as JSON, a missing one as "–", no float noise). */
export function formatConfigValue(value: unknown): string {
  if (value === undefined || value === null) return "–";
  if (typeof value === "string") return value;
  // 0.001 * 9 is 0.009000000000000001: twelve significant digits are plenty for a setting.
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(12)));
  if (typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

/** The metrics worth a column: what a run ends with on validation and test, never lr or speed. */
function isResultKey(key: string): boolean {
  return (key.startsWith("val/") || key.startsWith("test/")) && !key.endsWith("confusion_matrix");
}

/**
 * A run's final values: `summary.final` (its stored series' last values) over `final_metrics` (what
 * the server sorts `metrics.<name>` by); a run written without series has only the latter.
 */
export function finalValues(run: Pick<RunRow, "summary" | "final_metrics">): Record<string, unknown> {
  return { ...(run.final_metrics ?? {}), ...(run.summary?.final ?? {}) };
}

/**
 * The metric columns of the listed runs: final values (test/*, and val/* where there is neither a
 * test/ counterpart nor a best column), then best values (val/* series).
 */
export function metricColumns(runs: readonly RunRow[]): { final: string[]; best: string[] } {
  const final = new Set<string>();
  const best = new Set<string>();
  for (const run of runs) {
    for (const [key, value] of Object.entries(finalValues(run))) if (isResultKey(key) && typeof value === "number") final.add(key);
    for (const key of Object.keys(run.summary?.best ?? {})) if (key.startsWith("val/")) best.add(key);
  }
  // A final val/ value says little next to the test one and the best val/ one: one column less each.
  for (const key of [...final])
    if (key.startsWith("val/") && (final.has(`test/${key.slice(4)}`) || best.has(key))) final.delete(key);
  const order = (a: string, b: string) => (a.split("/")[0] === b.split("/")[0] ? a.localeCompare(b) : a.startsWith("val/") ? -1 : 1);
  return { final: [...final].sort(order), best: [...best].sort(order) };
}

/**
 * A column of the table: its id, its header, and its field in the runs query language (the server
 * sorts by it and a saved view lists it; null where the server cannot sort by it).
 */
export interface Column {
  id: string;
  label: string;
  key: string | null;
  /** The value as stored, for the cell (graph columns; others read their own source). */
  raw?: (run: RunRow) => unknown;
}

/** Seconds the run took (or has taken so far): the server's `duration_s`, else from its times. */
export function durationOf(run: Pick<RunRow, "duration_s" | "started_at" | "finished_at">, now = Date.now()): number | null {
  if (run.duration_s !== undefined) return run.duration_s; // a server from before issue 10 has none
  if (!run.started_at) return null;
  const end = run.finished_at ? Date.parse(run.finished_at) : now;
  return Math.max(0, (end - Date.parse(run.started_at)) / 1000);
}

/** Flattened graph parameters per revision key (`revisionKey`), as the table has fetched them. */
export type GraphParams = ReadonlyMap<string, Record<string, unknown>>;

/**
 * The fixed columns, then one per differing config field, graph parameter (when the revisions are
 * known), final metric and best metric.
 */
export function tableColumns(
  runs: readonly RunRow[],
  graphs: GraphParams = new Map(),
): { fixed: Column[]; config: Column[]; graph: Column[]; final: Column[]; best: Column[] } {
  const fixed: Column[] = [
    { id: "name", label: "Name", key: "name" },
    { id: "status", label: "Status", key: "status" },
    { id: "who", label: "Who", key: null },
    { id: "when", label: "When", key: "created_at" },
    { id: "duration", label: "Duration", key: "duration" },
    { id: "graph", label: "Graph", key: null },
    { id: "dataset", label: "Dataset", key: null },
  ];
  const config = differingFields(runs.map((r) => r.config)).map<Column>((path) => ({
    id: `config:${path}`,
    label: path,
    key: `config.${path}`,
  }));
  const known = runs.filter((r) => graphs.has(revisionKey(r)));
  const graph = differingPaths(known.map((r) => graphs.get(revisionKey(r))!)).map<Column>((path) => ({
    id: `graph:${path}`,
    label: path,
    // Only node parameters are in the query language (an input's shape is not).
    key: path.startsWith("nodes.") ? path : null,
    raw: (r) => graphs.get(revisionKey(r))?.[path],
  }));
  const { final: finalKeys, best: bestKeys } = metricColumns(runs);
  const final = finalKeys.map<Column>((key) => ({ id: `final:${key}`, label: key, key: `metrics.${key}` }));
  const best = bestKeys.map<Column>((key) => ({ id: `best:${key}`, label: key, key: `best.${key}` }));
  return { fixed, config, graph, final, best };
}

/** The table's columns by group. */
export type TableColumns = ReturnType<typeof tableColumns>;

/** The flattened graph parameters of runs as the list gives them (?fields=graph_params), per revision. */
export function graphParamsOf(runs: readonly RunRow[]): GraphParams {
  const out = new Map<string, Record<string, unknown>>();
  for (const r of runs) if (r.graph_params && !out.has(revisionKey(r))) out.set(revisionKey(r), r.graph_params as Record<string, unknown>);
  return out;
}

/**
 * The columns a list of keys names (a saved view's or the picker's: `config.<path>`,
 * `nodes.<node>.<param>`, `metrics.<name>`, `best.<name>`), in the groups' order and each group in
 * the keys' order; other keys are left out. Graph cells read the run's `graph_params`.
 */
export function columnsOfKeys(keys: readonly string[]): TableColumns {
  const out: TableColumns = { fixed: tableColumns([]).fixed, config: [], graph: [], final: [], best: [] };
  for (const key of new Set(keys)) {
    const [prefix, rest] = [key.slice(0, key.indexOf(".")), key.slice(key.indexOf(".") + 1)];
    if (!rest || key.indexOf(".") < 0) continue;
    if (prefix === "config") out.config.push({ id: `config:${rest}`, label: rest, key });
    else if (prefix === "nodes") out.graph.push({ id: `graph:${key}`, label: key, key, raw: (r) => (r.graph_params as Record<string, unknown> | null | undefined)?.[key] });
    else if (prefix === "metrics") out.final.push({ id: `final:${rest}`, label: rest, key });
    else if (prefix === "best") out.best.push({ id: `best:${rest}`, label: rest, key });
  }
  return out;
}

export type SortDirection = "asc" | "desc";

/** The server's order: a column's `key` (a field of the query language) and a direction. */
export interface Sort {
  column: string;
  direction: SortDirection;
}

/** Newest first, as the server lists them. */
export const DEFAULT_SORT: Sort = { column: "created_at", direction: "desc" };

/**
 * A click on a header: the same column turns around; another starts ascending, except dates,
 * durations and metrics other than losses and errors, which start with the largest (newest first,
 * best accuracy first).
 */
export function nextSort(current: Sort, column: string): Sort {
  if (current.column === column) return { column, direction: current.direction === "asc" ? "desc" : "asc" };
  const metric = /^(metrics|best)\./.test(column);
  const largestFirst = ["created_at", "finished_at", "duration"].includes(column) || (metric && !/(loss|error|mae|mse)/i.test(column));
  return { column, direction: largestFirst ? "desc" : "asc" };
}

/** `?ordering=` for a sort ("-" for descending). */
export function orderingOf(sort: Sort): string {
  return `${sort.direction === "desc" ? "-" : ""}${sort.column}`;
}

/** The sort an `ordering` (a saved view's) stands for; the default for an empty one. */
export function sortOf(ordering: string): Sort {
  const text = ordering.trim();
  if (!text) return DEFAULT_SORT;
  return text.startsWith("-") ? { column: text.slice(1), direction: "desc" } : { column: text, direction: "asc" };
}

/** The keys of the optional columns shown (what a saved view stores). */
export function columnKeys(columns: Record<string, Column[]>): string[] {
  return Object.entries(columns)
    .filter(([group]) => group !== "fixed")
    .flatMap(([, cols]) => cols.map((c) => c.key ?? c.id));
}

/**
 * The ticked ids in the list's order where their rows are held (`rows`, in order), then the others
 * in the order they were ticked (a tick stays while its row scrolls away or a filter hides it).
 */
export function selectedInOrder(rows: readonly Pick<RunRow, "id">[], selected: ReadonlySet<number>): number[] {
  const held = rows.filter((r) => selected.has(r.id)).map((r) => r.id);
  const seen = new Set(held);
  return [...held, ...[...selected].filter((id) => !seen.has(id))];
}

/** A tag as typed: trimmed, inner spaces kept; "" when there is nothing to add. */
export function cleanTag(text: string): string {
  return text.trim().replace(/\s+/g, " ");
}

/** The tags with `tag` added once (case-sensitive, as stored). */
export function withTag(tags: readonly string[], tag: string): string[] {
  const clean = cleanTag(tag);
  return clean && !tags.includes(clean) ? [...tags, clean] : [...tags];
}
