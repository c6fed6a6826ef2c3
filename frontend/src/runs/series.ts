// Metric series of one run, merged from the REST history and the stream without duplicates.
//
// A point is identified by (key, step), as in the database (unique run/key/step): a point for a
// step that is already there replaces it (a resumed run redoes steps), and a point for an earlier
// step is inserted in order, so the order in which points arrive never matters.
import type { MetricEvent, MetricSeriesJson } from "./types";

export interface Series {
  steps: number[];
  epochs: number[];
  values: (number | null)[];
}

/** Index of the first step >= `step` in a sorted array. */
function lowerBound(steps: number[], step: number): number {
  let lo = 0;
  let hi = steps.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (steps[mid] < step) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function finiteOrNull(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** Every metric series of a run; `version` goes up on each change (for redrawing). */
export class SeriesSet {
  private readonly byKey = new Map<string, Series>();
  version = 0;

  /** Adds or replaces the point of `key` at `step`; returns whether anything changed. */
  add(key: string, step: number, epoch: number, value: number | null): boolean {
    let series = this.byKey.get(key);
    if (!series) {
      series = { steps: [], epochs: [], values: [] };
      this.byKey.set(key, series);
    }
    const v = finiteOrNull(value);
    const n = series.steps.length;
    // Almost every point is appended: check the end before searching.
    const at = n === 0 || series.steps[n - 1] < step ? n : lowerBound(series.steps, step);
    if (at < n && series.steps[at] === step) {
      if (series.values[at] === v && series.epochs[at] === epoch) return false;
      series.values[at] = v;
      series.epochs[at] = epoch;
    } else {
      series.steps.splice(at, 0, step);
      series.epochs.splice(at, 0, epoch);
      series.values.splice(at, 0, v);
    }
    this.version++;
    return true;
  }

  /** Adds every value of a stream `metric` event. */
  addEvent(event: Pick<MetricEvent, "step" | "epoch" | "values">): boolean {
    let changed = false;
    for (const [key, value] of Object.entries(event.values)) changed = this.add(key, event.step, event.epoch, value) || changed;
    return changed;
  }

  /** Adds series as GET /api/runs/<id>/metrics/ returns them. */
  addRest(series: Record<string, MetricSeriesJson>): boolean {
    let changed = false;
    for (const [key, s] of Object.entries(series))
      for (let i = 0; i < s.step.length; i++) changed = this.add(key, s.step[i], s.epoch[i], s.value[i]) || changed;
    return changed;
  }

  keys(): string[] {
    return [...this.byKey.keys()].sort();
  }

  get(key: string): Series | undefined {
    return this.byKey.get(key);
  }

  /** How many points `key` has. */
  count(key: string): number {
    return this.byKey.get(key)?.steps.length ?? 0;
  }

  /**
   * The series of `keys` on one shared x axis (uPlot's data layout): [steps, ...values], with
   * null where a series has no point at a step.
   */
  aligned(keys: string[]): [number[], ...(number | null)[][]] {
    const present = keys.map((k) => this.byKey.get(k));
    const all = new Set<number>();
    for (const s of present) if (s) for (const step of s.steps) all.add(step);
    const xs = [...all].sort((a, b) => a - b);
    const index = new Map(xs.map((x, i) => [x, i]));
    const columns = present.map((s) => {
      const column: (number | null)[] = new Array(xs.length).fill(null);
      if (s) for (let i = 0; i < s.steps.length; i++) column[index.get(s.steps[i])!] = s.values[i];
      return column;
    });
    return [xs, ...columns];
  }
}

/** Keys shown in the loss chart and in the second chart (accuracy, or regression metrics). */
export function chartKeys(keys: string[]): { loss: string[]; quality: string[] } {
  const curves = keys.filter((k) => k.startsWith("train/") || k.startsWith("val/"));
  const loss = curves.filter((k) => k.endsWith("/loss"));
  const quality = curves.filter((k) => !k.endsWith("/loss") && !k.endsWith("confusion_matrix"));
  // Train before val, then by name: the legend reads the same on every run.
  const order = (a: string, b: string) => (a.startsWith("train/") === b.startsWith("train/") ? a.localeCompare(b) : a.startsWith("train/") ? -1 : 1);
  return { loss: loss.sort(order), quality: quality.sort(order) };
}

/** A zoomed stretch of steps, both ends included. */
export interface StepWindow {
  from: number;
  to: number;
}

/**
 * The steps a chart's x range [min, max] shows, widened to whole steps; null for an empty or
 * unusable range (a click without a drag).
 */
export function stepWindow(min: number | null | undefined, max: number | null | undefined): StepWindow | null {
  if (min == null || max == null || !Number.isFinite(min) || !Number.isFinite(max)) return null;
  const from = Math.floor(Math.min(min, max));
  const to = Math.ceil(Math.max(min, max));
  return to > from ? { from, to } : null;
}

/** Fetches the series of a window (GET /api/runs/<id>/metrics/?keys=&from_step=&to_step=&max_points=). */
export type WindowFetch = (keys: string[], window: StepWindow, maxPoints: number) => Promise<{ series: Record<string, MetricSeriesJson> }>;

/**
 * What a chart shows while zoomed: the window fetched at full resolution (the server returns every
 * stored point when the window holds at most `maxPoints`), never the overview's points re-sampled.
 * Only the newest zoom counts: an answer that arrives after a later zoom or a reset is dropped.
 */
export class ZoomLoader {
  private generation = 0;
  window: StepWindow | null = null;

  constructor(
    private readonly fetchWindow: WindowFetch,
    private readonly maxPoints = 1000,
  ) {}

  /** Zooms to `window`; resolves to the window's series, or null when superseded or failed. */
  async zoom(keys: string[], window: StepWindow): Promise<SeriesSet | null> {
    const generation = ++this.generation;
    this.window = window;
    try {
      const answer = await this.fetchWindow(keys, window, this.maxPoints);
      if (generation !== this.generation) return null;
      const set = new SeriesSet();
      set.addRest(answer.series);
      return set;
    } catch {
      return null;
    }
  }

  /** Back to the overview: a pending zoom's answer is dropped. */
  reset(): void {
    this.generation++;
    this.window = null;
  }

  get zoomed(): boolean {
    return this.window !== null;
  }
}
