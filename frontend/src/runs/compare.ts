// The comparison view's logic (pure; tested in vitest): its URL, the charts' keys, every run's
// curve of one metric on one shared x axis (runs log different steps), the configuration rows
// that differ and the final metrics side by side.
import type { Schema } from "../api/types";
import { type ChartView, DEFAULT_VIEW, type XAxis, emaSmooth } from "./chartView";
import { COMPARE_MAX, finalValues, runName } from "./runsTable";
import type { MetricSeriesJson } from "./types";

/** GET /api/runs/compare/: the runs (series and what each run is), config_diff, graph_diff. */
export type CompareAnswerJson = Schema<"CompareAnswer">;
/** One run of the comparison: its series, name, status, graph revision, config, summary. */
export type CompareRunJson = Schema<"CompareRun">;
/** A configuration field that differs: its dotted path and each run's value (keyed by run id). */
export type ConfigDiffRow = Schema<"ConfigDiffField">;
/** Runs on another revision than the first run's, and what changed. */
export type GraphDiffEntry = Schema<"GraphDiff">;

// ---- the URL -------------------------------------------------------------------------------------

export interface CompareState {
  ids: number[];
  view: ChartView;
}

const MAX_SMOOTHING = 0.95;

/** `?ids=1,2,3&x=epoch&log=1&smooth=0.6` -> the runs (unique, in order, at most 20) and the view. */
export function parseCompareQuery(search: string): CompareState {
  const query = new URLSearchParams(search);
  const ids: number[] = [];
  for (const part of (query.get("ids") ?? "").split(",")) {
    const id = Number(part.trim());
    if (part.trim() && Number.isInteger(id) && id > 0 && !ids.includes(id)) ids.push(id);
  }
  const x: XAxis = query.get("x") === "epoch" ? "epoch" : "step";
  const log = query.get("log") === "1";
  const smooth = Number(query.get("smooth") ?? 0);
  const smoothing = Number.isFinite(smooth) ? Math.min(MAX_SMOOTHING, Math.max(0, smooth)) : 0;
  return { ids: ids.slice(0, COMPARE_MAX), view: { x, log, smoothing } };
}

/** The query string that reopens the comparison (the default view adds nothing). */
export function compareQuery(state: CompareState): string {
  const parts = [`ids=${state.ids.join(",")}`];
  if (state.view.x !== DEFAULT_VIEW.x) parts.push(`x=${state.view.x}`);
  if (state.view.log) parts.push("log=1");
  if (state.view.smoothing > 0) parts.push(`smooth=${Number(state.view.smoothing.toFixed(2))}`);
  return parts.join("&");
}

// ---- what the charts draw ------------------------------------------------------------------------

/** Points per series the server sends for a chart this many pixels wide (about one per pixel). */
export function maxPointsFor(widthPx: number): number {
  return Math.min(2000, Math.max(100, Math.round(widthPx)));
}

function keyRank(key: string): number {
  if (key.endsWith("/loss")) return 0;
  if (key.startsWith("val/") || key.startsWith("train/")) return 1;
  return 2;
}

/** The metric keys any run has a curve of, one chart each: losses first, then val/train metrics, then the rest. */
export function compareKeys(runs: readonly Pick<CompareRunJson, "series">[]): string[] {
  const keys = new Set<string>();
  // A key no run has two points of (test/*, logged once at the end) is no curve: the finals table has it.
  for (const r of runs)
    for (const [k, s] of Object.entries(r.series ?? {})) if (!k.endsWith("confusion_matrix") && s.step.length > 1) keys.add(k);
  const part = (k: string) => (k.startsWith("train/") ? 0 : k.startsWith("val/") ? 1 : 2);
  return [...keys].sort((a, b) => keyRank(a) - keyRank(b) || part(a) - part(b) || a.localeCompare(b));
}

/** One run's curve of a metric (absent when that run never logged the key). */
export interface RunCurve {
  run: number;
  label: string;
  series?: MetricSeriesJson;
}

/**
 * At most this many shared x values: 20 runs downsampled on different steps would otherwise give
 * 20 x 700 rows of mostly nulls, and every redraw (a smoothing move) walks all of them.
 */
export const MAX_COLUMNS = 4000;

type Aligned = [number[], ...(number | null)[][]];

/**
 * The runs' curves on one shared, ascending x axis (uPlot's data layout): [xs, ...one column per
 * run], null where a run has no point at an x. Runs log different steps (batch sizes, downsampled
 * buckets); each keeps exactly its own points. By epoch, a run's points at the same epoch keep the
 * last one. When the union of x values is longer than `maxColumns`, x is snapped to a grid of
 * `maxColumns` cells over the range (a fraction of a pixel each): every point is still there, in
 * its order, at most a few cells from its x (a run's next point takes its next free cell).
 */
export function alignRuns(curves: readonly RunCurve[], x: XAxis, maxColumns = MAX_COLUMNS): Aligned {
  // Typed-array sort and a moving cursor: 20 runs of 2,000 points on different steps align in a
  // few milliseconds (a Map per run and a Set took ten times as long).
  const xsOf = (c: RunCurve) => (c.series ? (x === "epoch" ? c.series.epoch : c.series.step) : []);
  const total = curves.reduce((n, c) => n + xsOf(c).length, 0);
  const sorted = new Float64Array(total);
  let n = 0;
  for (const c of curves) for (const v of xsOf(c)) sorted[n++] = v;
  sorted.sort();
  const xs: number[] = [];
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) xs.push(sorted[i]);
  if (xs.length > maxColumns) return snapped(curves, xsOf, xs[0], xs[xs.length - 1], maxColumns);
  const columns = curves.map((c) => {
    const column: (number | null)[] = new Array(xs.length).fill(null);
    const own = xsOf(c);
    const values = c.series?.value ?? [];
    let at = 0;
    for (let i = 0; i < own.length; i++) {
      const target = own[i];
      // Points come in order; a point out of order is found by binary search.
      if (xs[at] !== target) at = xs[at] !== undefined && xs[at] < target && xs[at + 1] === target ? at + 1 : lowerBound(xs, target);
      column[at] = finiteOrNull(values[i]); // the last point at an x wins
    }
    return column;
  });
  return [xs, ...columns];
}

function finiteOrNull(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/** alignRuns on a grid of `cells` cells over [lo, hi]; cells no run uses are left out. */
function snapped(curves: readonly RunCurve[], xsOf: (c: RunCurve) => readonly number[], lo: number, hi: number, cells: number): Aligned {
  const width = (hi - lo) / cells || 1;
  // A crowded end pushes a run's last points a few cells past `hi` (never drops them).
  const size = cells + Math.max(0, ...curves.map((c) => xsOf(c).length));
  const grid = curves.map(() => new Array<number | null | undefined>(size).fill(undefined));
  const used = new Uint8Array(size);
  curves.forEach((c, r) => {
    const own = xsOf(c);
    const values = c.series?.value ?? [];
    // In x order, so that a crowded stretch pushes points forward, never back past a later one.
    const order = own.map((_, i) => i);
    if (own.some((v, i) => i > 0 && v < own[i - 1])) order.sort((a, b) => own[a] - own[b] || a - b);
    let last = -1;
    for (const i of order) {
      const cell = Math.max(last + 1, Math.min(cells - 1, Math.floor((own[i] - lo) / width)));
      grid[r][cell] = finiteOrNull(values[i]);
      used[cell] = 1;
      last = cell;
    }
  });
  const keep: number[] = [];
  for (let cell = 0; cell < size; cell++) if (used[cell]) keep.push(cell);
  const xs = keep.map((cell) => lo + (cell + 0.5) * width);
  return [xs, ...grid.map((g) => keep.map((cell) => g[cell] ?? null))];
}

function lowerBound(xs: readonly number[], target: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid] < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** One drawn line: whose, its legend label, whether it is the faint raw curve behind a smoothed one. */
export interface OverlayLine {
  run: number;
  /** Position of the run in the comparison (its colour). */
  index: number;
  label: string;
  raw: boolean;
}

/**
 * uPlot's data for one metric in this view: aligned runs (pass `aligned` = alignRuns(curves, x)
 * kept from before when only log or smoothing changed), log-drawable values, smoothing.
 */
export function overlayData(
  curves: readonly RunCurve[],
  view: ChartView,
  aligned: Aligned = alignRuns(curves, view.x),
): { data: [number[], ...(number | null)[][]]; lines: OverlayLine[] } {
  const [xs, ...columns] = aligned;
  const data: [number[], ...(number | null)[][]] = [xs];
  const lines: OverlayLine[] = [];
  curves.forEach((c, index) => {
    const column = view.log ? columns[index].map((v) => (v !== null && v > 0 ? v : null)) : columns[index];
    if (view.smoothing > 0) {
      data.push(column);
      lines.push({ run: c.run, index, label: `${c.label} (raw)`, raw: true });
      data.push(emaSmooth(column, view.smoothing));
      lines.push({ run: c.run, index, label: c.label, raw: false });
    } else {
      data.push(column);
      lines.push({ run: c.run, index, label: c.label, raw: false });
    }
  });
  return { data, lines };
}

/** 20 colours that stay apart (Tableau 20, darker first). */
export const RUN_COLORS = [
  "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
  "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
];

export function runColor(index: number): string {
  return RUN_COLORS[index % RUN_COLORS.length];
}

/** "name" for a run with one, else "run <id>". */
export function compareLabel(r: Pick<CompareRunJson, "id" | "name">): string {
  return runName(r);
}

// ---- the tables ----------------------------------------------------------------------------------

/** Smaller is better for losses and errors, larger for the rest. */
export function lowerIsBetter(key: string): boolean {
  const name = key.split("/").pop() ?? key;
  return /loss|mae|mse|rmse|error|ece/.test(name);
}

/** A row of the final metrics table: the key, each run's value, and which runs are best (ties too). */
export interface FinalRow {
  key: string;
  values: (number | null)[];
  best: number[];
}

/** Only results have a "best": the learning rate or the speed of a run is not better for being higher. */
function hasBest(key: string): boolean {
  return key.startsWith("train/") || key.startsWith("val/") || key.startsWith("test/");
}

/** Every numeric final metric of any run, side by side in the runs' order; the best ones marked. */
export function finalRows(runs: readonly Pick<CompareRunJson, "summary" | "final_metrics">[]): FinalRow[] {
  const finals = runs.map(finalValues);
  const keys = new Set<string>();
  for (const f of finals) for (const [k, v] of Object.entries(f)) if (typeof v === "number") keys.add(k);
  const split = (k: string) => (k.startsWith("test/") ? 0 : k.startsWith("val/") ? 1 : k.startsWith("train/") ? 2 : 3);
  return [...keys]
    .sort((a, b) => split(a) - split(b) || a.localeCompare(b))
    .map((key) => {
      const values = finals.map((f) => (typeof f[key] === "number" && Number.isFinite(f[key]) ? (f[key] as number) : null));
      const present = values.filter((v): v is number => v !== null);
      if (!hasBest(key) || present.length < 2) return { key, values, best: [] };
      const top = lowerIsBetter(key) ? Math.min(...present) : Math.max(...present);
      return { key, values, best: values.flatMap((v, i) => (v === top ? [i] : [])) };
    });
}
