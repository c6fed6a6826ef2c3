import { describe, expect, it } from "vitest";
import { extent, histogramSeries, pairsSeries, precisionRecallSeries, reliabilityNote, reliabilitySeries, rocSeries, sortMisclassified } from "./curves";
import type { MisclassifiedSample } from "./judgeTypes";

describe("evaluation curves", () => {
  it("draws the reliability curve from the non-empty bins, beside the diagonal", () => {
    const [diagonal, model] = reliabilitySeries({
      expected_calibration_error: 0.1,
      bins: [
        { lower: 0, upper: 0.5, count: 0, confidence: null, accuracy: null },
        { lower: 0.5, upper: 0.75, count: 4, confidence: 0.6, accuracy: 0.5 },
        { lower: 0.75, upper: 1, count: 10, confidence: 0.9, accuracy: 0.95 },
      ],
    });
    expect(diagonal.points).toEqual([{ x: 0, y: 0 }, { x: 1, y: 1 }]);
    expect(model.points).toEqual([{ x: 0.6, y: 0.5 }, { x: 0.9, y: 0.95 }]);
  });

  it("says why there is no curve when every sample falls in one bin (a 100%-accurate run)", () => {
    const reliability = {
      expected_calibration_error: 0.003,
      bins: [
        { lower: 0, upper: 0.9, count: 0, confidence: null, accuracy: null },
        { lower: 0.9, upper: 1, count: 30, confidence: 0.997, accuracy: 1 },
      ],
    };
    const [, model] = reliabilitySeries(reliability);
    expect(model.kind).toBe("dots");
    expect(model.points).toEqual([{ x: 0.997, y: 1 }]);
    expect(reliabilityNote(reliability)).toBe(
      "All 30 test samples fall in one confidence bin (90%–100%), right 100% of the time at 99.7% mean confidence: one point, so no curve to draw. Calibration shows only where a model is sometimes unsure.",
    );
    expect(reliabilityNote({ expected_calibration_error: null, bins: [] })).toContain("No test sample");
    expect(
      reliabilityNote({
        expected_calibration_error: 0.1,
        bins: [
          { lower: 0.5, upper: 0.75, count: 4, confidence: 0.6, accuracy: 0.5 },
          { lower: 0.75, upper: 1, count: 10, confidence: 0.9, accuracy: 0.95 },
        ],
      }),
    ).toBeNull();
  });

  it("orders the ROC and precision-recall points along x", () => {
    const roc = rocSeries({ positive_class: "yes", fpr: [0, 0.5, 0.2, 1], tpr: [0, 0.9, 0.6, 1], thresholds: [1, 0.3, 0.6, 0], auc: 0.8 });
    expect(roc[1].label).toBe("ROC (yes)");
    expect(roc[1].points.map((p) => p.x)).toEqual([0, 0.2, 0.5, 1]);
    const pr = precisionRecallSeries({ positive_class: "yes", precision: [1, 0.5, 0.8], recall: [0, 1, 0.5], thresholds: [0.9, 0.1], average_precision: 0.7 });
    expect(pr[0].points).toEqual([{ x: 0, y: 1 }, { x: 0.5, y: 0.8 }, { x: 1, y: 0.5 }]);
    expect(rocSeries(null)).toEqual([]);
  });

  it("plots predicted over true with the identity line over their range, and residual bars at bin centres", () => {
    const [identity, dots] = pairsSeries({ index: [0, 1], true: [1, 3], predicted: [2, 5] });
    expect(identity.points).toEqual([{ x: 1, y: 1 }, { x: 5, y: 5 }]);
    expect(dots.points).toEqual([{ x: 1, y: 2 }, { x: 3, y: 5 }]);
    const [bars] = histogramSeries({ edges: [-1, 0, 1], counts: [3, 7] });
    expect(bars.points).toEqual([{ x: -0.5, y: 3 }, { x: 0.5, y: 7 }]);
    expect(extent([bars], "y")).toEqual([0, 7]);
  });
});

describe("sortMisclassified", () => {
  const m = (index: number, probability: number): MisclassifiedSample => ({
    index, probability, true: "a", true_index: 0, predicted: "b", predicted_index: 1, true_probability: 0.1,
  });
  it("sorts by the model's confidence either way", () => {
    const list = [m(1, 0.6), m(2, 0.99), m(3, 0.4)];
    expect(sortMisclassified(list, "most").map((x) => x.index)).toEqual([2, 1, 3]);
    expect(sortMisclassified(list, "least").map((x) => x.index)).toEqual([3, 1, 2]);
  });
});
