// The sweep page's plots, as plain functions: one axis per searched parameter plus the objective
// (linear, log for log-scaled dimensions, categorical with evenly spaced choices), a position on
// an axis for each value, the line of a trial across the axes, ticks, and a colour per objective value.
import type { SearchSpace, SweepTrial } from "./types";

export type AxisKind = "linear" | "log" | "categorical";

export interface Axis {
  key: string;
  label: string;
  kind: AxisKind;
  /** linear/log: the value range (log: in the values themselves, not their logs). */
  min: number;
  max: number;
  /** categorical: the choices as text, in order. */
  categories: string[];
}

export interface Tick {
  value: string;
  /** 0 at the bottom of the axis, 1 at the top. */
  at: number;
}

/** The text a categorical value is drawn with (null reads "null"). */
export function categoryOf(v: unknown): string {
  return v === null || v === undefined ? "null" : typeof v === "string" ? v : JSON.stringify(v);
}

/** An axis for the values of one key, with its dimension's range when the space gives one. */
export function makeAxis(key: string, label: string, values: unknown[], dim?: SearchSpace[string]): Axis {
  const numbers = values.filter((v): v is number => typeof v === "number" && Number.isFinite(v));
  const categorical = dim ? dim.type === "categorical" : numbers.length < values.filter((v) => v !== undefined).length;
  if (categorical) {
    const categories = dim?.type === "categorical" ? dim.choices.map(categoryOf) : [];
    for (const v of values) if (v !== undefined && !categories.includes(categoryOf(v))) categories.push(categoryOf(v));
    return { key, label, kind: "categorical", min: 0, max: Math.max(0, categories.length - 1), categories };
  }
  const log = dim !== undefined && dim.type !== "categorical" && !!dim.log;
  let min = Math.min(...numbers, ...(dim && dim.type !== "categorical" ? [dim.low] : []));
  let max = Math.max(...numbers, ...(dim && dim.type !== "categorical" ? [dim.high] : []));
  if (!Number.isFinite(min) || !Number.isFinite(max)) {
    min = log ? 1 : 0;
    max = log ? 10 : 1;
  }
  if (log) {
    min = Math.max(min, Number.MIN_VALUE);
    if (max <= min) max = min * 10;
  } else if (max === min) {
    const pad = Math.abs(min) > 0 ? Math.abs(min) * 0.1 : 1;
    min -= pad;
    max += pad;
  }
  return { key, label, kind: log ? "log" : "linear", min, max, categories: [] };
}

/** Where a value sits on an axis, 0 (bottom) .. 1 (top); null when it cannot be drawn there. */
export function position(axis: Axis, v: unknown): number | null {
  if (axis.kind === "categorical") {
    const i = axis.categories.indexOf(categoryOf(v));
    if (i < 0) return null;
    return axis.categories.length === 1 ? 0.5 : i / (axis.categories.length - 1);
  }
  if (typeof v !== "number" || !Number.isFinite(v)) return null;
  if (axis.kind === "log") {
    if (v <= 0) return null;
    const lo = Math.log10(axis.min);
    const hi = Math.log10(axis.max);
    return hi === lo ? 0.5 : clamp((Math.log10(v) - lo) / (hi - lo));
  }
  return clamp((v - axis.min) / (axis.max - axis.min));
}

function clamp(x: number): number {
  return Math.min(1, Math.max(0, x));
}

/** A number as a short tick label ("0.001", "1e-5", "128"). */
export function shortNumber(v: number): string {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a < 1e-3 || a >= 1e5) return v.toExponential(0).replace("e+", "e");
  return String(Number(v.toPrecision(3)));
}

/** Ticks of an axis: every choice, powers of ten (log), or about five even steps (linear). */
export function ticks(axis: Axis, count = 5): Tick[] {
  if (axis.kind === "categorical") return axis.categories.map((c, i) => ({ value: c, at: position(axis, axis.categories[i])! }));
  if (axis.kind === "log") {
    const lo = Math.ceil(Math.log10(axis.min) - 1e-9);
    const hi = Math.floor(Math.log10(axis.max) + 1e-9);
    const out: Tick[] = [];
    for (let e = lo; e <= hi; e++) out.push({ value: shortNumber(10 ** e), at: position(axis, 10 ** e)! });
    // Less than a decade: the ends say the range.
    if (out.length < 2) return [axis.min, axis.max].map((v) => ({ value: shortNumber(v), at: position(axis, v)! }));
    return out;
  }
  const raw = (axis.max - axis.min) / Math.max(1, count - 1);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: Tick[] = [];
  for (let v = Math.ceil(axis.min / step - 1e-9) * step; v <= axis.max + step * 1e-9; v += step) {
    const value = Math.abs(v) < step * 1e-9 ? 0 : v;
    out.push({ value: shortNumber(value), at: position(axis, value)! });
  }
  return out;
}

/** The value a trial is drawn with: its objective, or for a pruned trial its last reported value. */
export function drawnValue(t: SweepTrial): number | null {
  if (typeof t.value === "number" && Number.isFinite(t.value)) return t.value;
  if (t.state === "pruned" && t.intermediate?.length) {
    const last = t.intermediate[t.intermediate.length - 1][1];
    return Number.isFinite(last) ? last : null;
  }
  return null;
}

export const OBJECTIVE_KEY = "__objective__";

/** The axes of a sweep's plot: each searched key (in the space's order), then the objective. */
export function sweepAxes(space: SearchSpace, trials: SweepTrial[], objective: string): Axis[] {
  const drawn = trials.filter((t) => drawnValue(t) !== null);
  const axes = Object.keys(space).map((key) =>
    makeAxis(key, key.startsWith("nodes.") ? key.slice(6) : key, drawn.map((t) => t.params?.[key]), space[key]),
  );
  axes.push(makeAxis(OBJECTIVE_KEY, objective, drawn.map(drawnValue)));
  return axes;
}

export interface PlotBox {
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/** The x of axis i of n in the box. */
export function axisX(box: PlotBox, i: number, n: number): number {
  const inner = box.width - box.left - box.right;
  return box.left + (n <= 1 ? inner / 2 : (inner * i) / (n - 1));
}

/** The y of a 0..1 position in the box (1 is at the top). */
export function axisY(box: PlotBox, at: number): number {
  return box.top + (1 - at) * (box.height - box.top - box.bottom);
}

/** A trial's points across the axes ("x,y x,y ..." of an SVG polyline), or null when one is missing. */
export function trialPoints(axes: Axis[], t: SweepTrial, box: PlotBox): string | null {
  const pts: string[] = [];
  for (let i = 0; i < axes.length; i++) {
    const a = axes[i];
    const at = position(a, a.key === OBJECTIVE_KEY ? drawnValue(t) : t.params?.[a.key]);
    if (at === null) return null;
    pts.push(`${round(axisX(box, i, axes.length))},${round(axisY(box, at))}`);
  }
  return pts.join(" ");
}

function round(v: number): number {
  return Math.round(v * 10) / 10;
}

/** 0..1 goodness of an objective value on its axis: 1 is the best (low for min, high for max). */
export function goodness(axis: Axis, value: number, mode: "min" | "max"): number {
  const at = position(axis, value) ?? 0;
  return mode === "min" ? 1 - at : at;
}

/** A colour from poor (orange) to good (dark blue) for t in 0..1; every stop reads on white. */
export function colourFor(t: number): string {
  const stops = [
    [230, 140, 20],
    [150, 170, 40],
    [33, 145, 140],
    [40, 90, 170],
    [30, 30, 110],
  ];
  const x = clamp(t) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const c = stops[i].map((v, k) => Math.round(v + (stops[i + 1][k] - v) * f));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

/** Trials worth a line: those with a value (complete) or a last reported value (pruned). */
export function drawnTrials(trials: SweepTrial[]): SweepTrial[] {
  return trials.filter((t) => drawnValue(t) !== null);
}
