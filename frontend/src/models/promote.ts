// The figures a person weighs before moving production: each recorded metric of the version to
// promote beside the current production version's, the change, and whether it is better.
import { versionFigures } from "./api";

export type Direction = "min" | "max";
export type Verdict = "better" | "worse" | "same" | null;

const LOWER = /(^|[_-])(loss|mae|mse|rmse|error|ece|nll|perplexity)([_-]|$)/;
const HIGHER = /(^|[_-])(accuracy|acc|f1|precision|recall|auc|auroc|r2|iou|dice|map|top\d+)([_-]|$)/;

/** Which way a metric improves, by its name (`val/loss`: min, `test/accuracy`: max); null when
 * the name does not say (then no verdict is drawn). */
export function metricDirection(key: string): Direction | null {
  const name = (key.split("/").pop() ?? key).toLowerCase();
  if (LOWER.test(name)) return "min";
  if (HIGHER.test(name)) return "max";
  return null;
}

export interface DiffRow {
  key: string;
  /** The production version's value (null: no production, or it has no such figure). */
  before: number | null;
  after: number;
  delta: number | null;
  verdict: Verdict;
}

/** Each val/test figure of `next` against `current` (production's metrics, or null). */
export function metricDiff(next: Record<string, unknown>, current: Record<string, unknown> | null): DiffRow[] {
  const before = new Map(current ? versionFigures(current) : []);
  return versionFigures(next).map(([key, after]) => {
    const was = before.get(key) ?? null;
    const delta = was === null ? null : after - was;
    const direction = metricDirection(key);
    let verdict: Verdict = null;
    if (delta !== null && direction !== null) {
      verdict = Math.abs(delta) < 1e-12 ? "same" : (delta < 0) === (direction === "min") ? "better" : "worse";
    }
    return { key, before: was, after, delta, verdict };
  });
}

/** "+0.0312", "−0.0045", "0": a delta as a person reads it. */
export function formatDelta(delta: number | null): string {
  if (delta === null) return "–";
  if (Math.abs(delta) < 1e-12) return "0";
  const digits = Math.abs(delta) >= 100 ? 1 : 4;
  return `${delta > 0 ? "+" : "−"}${Math.abs(delta).toFixed(digits)}`;
}
