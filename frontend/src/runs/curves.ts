// Data of the evaluation charts (pure; tested in vitest): the reliability curve's points, ROC
// and precision-recall lines, predicted-versus-true points, histogram bars, misclassified order.
import type { EvaluationAnswer, MisclassifiedSample, Reliability } from "./judgeTypes";

export interface Point {
  x: number;
  y: number;
}

/** A chart's series: a line (or dots) of points, its legend label and CSS class. */
export interface CurveSeries {
  label: string;
  points: Point[];
  kind: "line" | "dots" | "bars";
  className?: string;
}

/** Reliability: (mean confidence, accuracy) of each non-empty bin, and the diagonal of perfect calibration. */
export function reliabilitySeries(reliability: Reliability | null | undefined): CurveSeries[] {
  const bins = reliability?.bins ?? [];
  const points = bins
    .filter((b) => b.count > 0 && b.confidence !== null && b.accuracy !== null)
    .map((b) => ({ x: b.confidence as number, y: b.accuracy as number }));
  return [
    { label: "perfectly calibrated", points: [{ x: 0, y: 0 }, { x: 1, y: 1 }], kind: "line", className: "ref" },
    // One bin (a model sure and right on every sample) is a point, not a line: draw it as a dot.
    { label: "model", points, kind: points.length < 2 ? "dots" : "line" },
  ];
}

/**
 * Why the reliability chart has no curve, when it has none: every test sample in one confidence bin
 * (a run that is sure and right about everything), or no sample at all. Null when there is a curve.
 */
export function reliabilityNote(reliability: Reliability | null | undefined): string | null {
  const bins = (reliability?.bins ?? []).filter((b) => b.count > 0 && b.confidence !== null && b.accuracy !== null);
  if (bins.length >= 2) return null;
  if (bins.length === 0) return "No test sample to place: the curve needs a test split.";
  const [b] = bins;
  const pct = (v: number) => `${Math.round(v * 1000) / 10}%`;
  return (
    `All ${b.count} test samples fall in one confidence bin (${pct(b.lower)}–${pct(b.upper)}), ` +
    `right ${pct(b.accuracy as number)} of the time at ${pct(b.confidence as number)} mean confidence: ` +
    `one point, so no curve to draw. Calibration shows only where a model is sometimes unsure.`
  );
}

/** ROC: true-positive rate over false-positive rate (and the chance diagonal). */
export function rocSeries(roc: EvaluationAnswer["roc"]): CurveSeries[] {
  if (!roc) return [];
  const points = roc.fpr.map((x, i) => ({ x, y: roc.tpr[i] ?? 0 }));
  return [
    { label: "chance", points: [{ x: 0, y: 0 }, { x: 1, y: 1 }], kind: "line", className: "ref" },
    { label: `ROC (${roc.positive_class})`, points: sortedByX(points), kind: "line" },
  ];
}

/** Precision over recall, ordered by recall. */
export function precisionRecallSeries(pr: EvaluationAnswer["precision_recall"]): CurveSeries[] {
  if (!pr) return [];
  const points = pr.recall.map((x, i) => ({ x, y: pr.precision[i] ?? 0 }));
  return [{ label: `precision-recall (${pr.positive_class})`, points: sortedByX(points), kind: "line" }];
}

/** Predicted over true (dots) and the identity line over their range. */
export function pairsSeries(pairs: EvaluationAnswer["pairs"]): CurveSeries[] {
  if (!pairs || !pairs.true.length) return [];
  const points = pairs.true.map((x, i) => ({ x, y: pairs.predicted[i] ?? 0 }));
  const all = [...pairs.true, ...pairs.predicted];
  const lo = Math.min(...all);
  const hi = Math.max(...all);
  return [
    { label: "predicted = true", points: [{ x: lo, y: lo }, { x: hi, y: hi }], kind: "line", className: "ref" },
    { label: "test samples", points, kind: "dots" },
  ];
}

/** Residual histogram: one bar per bin, at the bin's centre. */
export function histogramSeries(residuals: EvaluationAnswer["residuals"]): CurveSeries[] {
  if (!residuals || !residuals.counts.length) return [];
  const points = residuals.counts.map((count, i) => ({
    x: ((residuals.edges[i] ?? 0) + (residuals.edges[i + 1] ?? 0)) / 2,
    y: count,
  }));
  return [{ label: "residuals (predicted − true)", points, kind: "bars" }];
}

function sortedByX(points: Point[]): Point[] {
  return [...points].sort((a, b) => a.x - b.x || a.y - b.y);
}

/** The extent of every series' points (a flat range widened a little so it can be drawn). */
export function extent(series: CurveSeries[], axis: "x" | "y", fixed?: [number, number]): [number, number] {
  if (fixed) return fixed;
  const values = series.flatMap((s) => s.points.map((p) => p[axis]));
  if (!values.length) return [0, 1];
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (series.some((s) => s.kind === "bars") && axis === "y") lo = Math.min(0, lo);
  if (lo === hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  return [lo, hi];
}

export type ConfidenceOrder = "most" | "least";

/** Misclassified samples by the model's confidence in its wrong answer. */
export function sortMisclassified(list: readonly MisclassifiedSample[], order: ConfidenceOrder): MisclassifiedSample[] {
  const sign = order === "most" ? -1 : 1;
  return [...list].sort((a, b) => sign * (a.probability - b.probability) || a.index - b.index);
}
