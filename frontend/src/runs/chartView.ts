// How a metric chart reads (pure; tested in vitest): x by step or by epoch, a log-scale y (values
// <= 0 cannot be drawn there), and smoothing (TensorBoard's debiased exponential moving average)
// with the raw curve kept, faint, behind the smoothed one.
import type { SeriesSet } from "./series";

export type XAxis = "step" | "epoch";

export interface ChartView {
  x: XAxis;
  log: boolean;
  /** 0 (off) .. 0.99: the moving average's weight of the past. */
  smoothing: number;
}

export const DEFAULT_VIEW: ChartView = { x: "step", log: false, smoothing: 0 };

/** A debiased exponential moving average; a null stays null and does not break the average. */
export function emaSmooth(values: readonly (number | null)[], weight: number): (number | null)[] {
  if (weight <= 0) return [...values];
  let last = 0;
  let seen = 0;
  return values.map((v) => {
    if (v === null || !Number.isFinite(v)) return null;
    last = last * weight + (1 - weight) * v;
    seen++;
    return last / (1 - Math.pow(weight, seen));
  });
}

/** One drawn line: which key, whether it is the raw curve behind a smoothed one. */
export interface DrawnSeries {
  key: string;
  label: string;
  raw: boolean;
}

/**
 * uPlot's data for `keys` in this view: [x, ...lines] and what each line is. With smoothing on,
 * each key gives two lines, the faint raw one first.
 */
export function viewData(set: SeriesSet, keys: string[], view: ChartView): { data: [number[], ...(number | null)[][]]; lines: DrawnSeries[] } {
  const [steps, ...columns] = set.aligned(keys);
  let xs = steps;
  if (view.x === "epoch") {
    const epochOf = new Map<number, number>();
    for (const k of keys) {
      const s = set.get(k);
      if (s) s.steps.forEach((step, i) => epochOf.set(step, s.epochs[i]));
    }
    // Epochs grow with steps; a step without one keeps its neighbour's (uPlot needs ascending x).
    let prev = 0;
    xs = steps.map((step) => (prev = Math.max(prev, epochOf.get(step) ?? prev)));
  }
  const drawable = (c: (number | null)[]) => (view.log ? c.map((v) => (v !== null && v > 0 ? v : null)) : c);
  const data: [number[], ...(number | null)[][]] = [xs];
  const lines: DrawnSeries[] = [];
  keys.forEach((key, i) => {
    const column = drawable(columns[i] ?? []);
    if (view.smoothing > 0) {
      data.push(column);
      lines.push({ key, label: `${key} (raw)`, raw: true });
      data.push(emaSmooth(column, view.smoothing));
      lines.push({ key, label: key, raw: false });
    } else {
      data.push(column);
      lines.push({ key, label: key, raw: false });
    }
  });
  return { data, lines };
}
