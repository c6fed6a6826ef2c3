import { describe, expect, it } from "vitest";
import { SeriesSet, chartKeys } from "./series";

describe("SeriesSet", () => {
  it("never holds two points for one key and step", () => {
    const s = new SeriesSet();
    s.addEvent({ step: 10, epoch: 1, values: { "train/loss": 1.0 } });
    s.addEvent({ step: 20, epoch: 2, values: { "train/loss": 0.8 } });
    expect(s.addEvent({ step: 20, epoch: 2, values: { "train/loss": 0.8 } })).toBe(false);
    s.addRest({ "train/loss": { step: [10, 20], epoch: [1, 2], value: [1.0, 0.8] } });
    expect(s.count("train/loss")).toBe(2);
  });

  it("replaces the value of a redone step", () => {
    const s = new SeriesSet();
    s.add("train/loss", 10, 1, 1.0);
    expect(s.add("train/loss", 10, 1, 0.9)).toBe(true);
    expect(s.get("train/loss")!.values).toEqual([0.9]);
  });

  it("keeps steps sorted whatever order points arrive in", () => {
    const s = new SeriesSet();
    for (const step of [30, 10, 50, 20, 40, 10]) s.add("val/loss", step, step / 10, step / 100);
    expect(s.get("val/loss")!.steps).toEqual([10, 20, 30, 40, 50]);
    expect(s.get("val/loss")!.values).toEqual([0.1, 0.2, 0.3, 0.4, 0.5]);
  });

  it("turns NaN and missing values into gaps, not numbers", () => {
    const s = new SeriesSet();
    s.add("train/loss", 1, 0, Number.NaN);
    s.add("train/loss", 2, 0, null);
    expect(s.get("train/loss")!.values).toEqual([null, null]);
  });

  it("aligns series on the union of their steps", () => {
    const s = new SeriesSet();
    s.addEvent({ step: 5, epoch: 0.5, values: { "train/loss": 1.0 } });
    s.addEvent({ step: 10, epoch: 1, values: { "train/loss": 0.9, "val/loss": 0.95 } });
    s.addEvent({ step: 15, epoch: 1.5, values: { "train/loss": 0.8 } });
    expect(s.aligned(["train/loss", "val/loss", "missing"])).toEqual([
      [5, 10, 15],
      [1.0, 0.9, 0.8],
      [null, 0.95, null],
      [null, null, null],
    ]);
  });

  it("puts losses in one chart and accuracy or regression metrics in the other", () => {
    const keys = ["lr", "samples_per_s", "test/accuracy", "train/accuracy", "train/loss", "val/accuracy", "val/f1", "val/loss"];
    expect(chartKeys(keys)).toEqual({ loss: ["train/loss", "val/loss"], quality: ["train/accuracy", "val/accuracy", "val/f1"] });
    expect(chartKeys(["val/mae", "val/r2", "train/loss"]).quality).toEqual(["val/mae", "val/r2"]);
  });
});
