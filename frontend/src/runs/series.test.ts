import { describe, expect, it } from "vitest";
import { metricQuery } from "./api";
import { SeriesSet, type StepWindow, ZoomLoader, chartKeys, stepWindow } from "./series";

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

describe("zooming a chart", () => {
  const answer = (steps: number[]) => ({
    series: { "train/loss": { step: steps, epoch: steps.map((s) => s / 10), value: steps.map((s) => s / 100) } },
  });

  it("turns a selected x range into whole steps, and ignores a click", () => {
    expect(stepWindow(10.4, 99.2)).toEqual({ from: 10, to: 100 });
    expect(stepWindow(99.2, 10.4)).toEqual({ from: 10, to: 100 });
    expect(stepWindow(5, 5)).toBeNull();
    expect(stepWindow(null, 3)).toBeNull();
  });

  it("asks for the window at full resolution and shows exactly what the server returned", async () => {
    const asked: [string[], StepWindow, number][] = [];
    const loader = new ZoomLoader(async (keys, window, maxPoints) => {
      asked.push([keys, window, maxPoints]);
      return answer([500, 501, 502]);
    }, 1000);
    const shown = await loader.zoom(["train/loss"], { from: 500, to: 502 });
    expect(asked).toEqual([[["train/loss"], { from: 500, to: 502 }, 1000]]);
    expect(shown!.get("train/loss")!.steps).toEqual([500, 501, 502]);
    expect(loader.zoomed).toBe(true);
    loader.reset();
    expect(loader.zoomed).toBe(false);
  });

  it("drops an answer that arrives after a later zoom or a reset", async () => {
    const pending: ((value: ReturnType<typeof answer>) => void)[] = [];
    const loader = new ZoomLoader(() => new Promise((resolve) => pending.push(resolve)));
    const first = loader.zoom(["train/loss"], { from: 0, to: 100 });
    const second = loader.zoom(["train/loss"], { from: 40, to: 60 });
    pending[1](answer([40, 50, 60]));
    pending[0](answer([0, 100]));
    expect(await first).toBeNull();
    expect((await second)!.get("train/loss")!.steps).toEqual([40, 50, 60]);
    const third = loader.zoom(["train/loss"], { from: 1, to: 2 });
    loader.reset();
    pending[2](answer([1, 2]));
    expect(await third).toBeNull();
    expect(loader.window).toBeNull();
  });

  it("builds the metric query of a window", () => {
    expect(metricQuery(["train/loss", "val/loss"], { from: 10, to: 20 }, 1000)).toBe(
      "max_points=1000&keys=train%2Floss%2Cval%2Floss&from_step=10&to_step=20",
    );
    expect(metricQuery([], null, 50)).toBe("max_points=50");
  });
});
