import { describe, expect, it } from "vitest";
import { emaSmooth, viewData } from "./chartView";
import { SeriesSet } from "./series";

describe("emaSmooth", () => {
  it("is the debiased moving average, starting at the first value, skipping gaps", () => {
    const out = emaSmooth([1, null, 3], 0.5);
    expect(out[0]).toBeCloseTo(1);
    expect(out[1]).toBeNull();
    expect(out[2]).toBeCloseTo((0.5 * 0.5 + 0.5 * 3) / (1 - 0.25));
    expect(emaSmooth([1, 2], 0)).toEqual([1, 2]);
  });
});

describe("viewData", () => {
  const set = new SeriesSet();
  set.add("train/loss", 1, 0.5, 2);
  set.add("train/loss", 2, 1, 0);
  set.add("train/loss", 3, 1.5, 0.5);

  it("draws by step, raw", () => {
    const { data, lines } = viewData(set, ["train/loss"], { x: "step", log: false, smoothing: 0 });
    expect(data).toEqual([[1, 2, 3], [2, 0, 0.5]]);
    expect(lines).toEqual([{ key: "train/loss", label: "train/loss", raw: false }]);
  });

  it("draws by epoch, leaves out what a log scale cannot show, and keeps the raw curve behind the smoothed one", () => {
    const { data, lines } = viewData(set, ["train/loss"], { x: "epoch", log: true, smoothing: 0.5 });
    expect(data[0]).toEqual([0.5, 1, 1.5]);
    expect(data[1]).toEqual([2, null, 0.5]);
    expect(lines.map((l) => l.raw)).toEqual([true, false]);
    expect(data[2][0]).toBeCloseTo(2);
    expect(data[2][1]).toBeNull();
  });
});
