import { describe, expect, it } from "vitest";
import {
  alignRuns,
  compareKeys,
  compareQuery,
  finalRows,
  maxPointsFor,
  overlayData,
  parseCompareQuery,
  type CompareRunJson,
} from "./compare";

/** A run of the comparison with only what a test needs. */
const compareRun = (id: number, extra: Partial<CompareRunJson>): CompareRunJson =>
  ({ run: id, id, name: "", series: {}, config: {}, final_metrics: {}, summary: undefined, ...extra }) as unknown as CompareRunJson;

const series = (step: number[], value: (number | null)[], epoch = step.map((s) => s / 10)) => ({ step, epoch, value });

describe("the comparison's URL", () => {
  it("reads ids (unique, positive, at most 100) and the view", () => {
    expect(parseCompareQuery("?ids=3,1,3,x,-2,0,7&x=epoch&log=1&smooth=0.6")).toEqual({
      ids: [3, 1, 7],
      view: { x: "epoch", log: true, smoothing: 0.6 },
    });
    expect(parseCompareQuery("?ids=")).toEqual({ ids: [], view: { x: "step", log: false, smoothing: 0 } });
    expect(parseCompareQuery("?ids=1,2&smooth=7&x=time").view).toEqual({ x: "step", log: false, smoothing: 0.95 });
    const many = Array.from({ length: 125 }, (_, i) => i + 1).join(",");
    expect(parseCompareQuery(`?ids=${many}`).ids).toHaveLength(100);
  });

  it("writes what it reads back, leaving the default view out", () => {
    expect(compareQuery({ ids: [1, 2, 3], view: { x: "step", log: false, smoothing: 0 } })).toBe("ids=1,2,3");
    const state = { ids: [4, 2], view: { x: "epoch" as const, log: true, smoothing: 0.35 } };
    expect(compareQuery(state)).toBe("ids=4,2&x=epoch&log=1&smooth=0.35");
    expect(parseCompareQuery(`?${compareQuery(state)}`)).toEqual(state);
  });

  it("asks about one point per pixel of the chart, within bounds", () => {
    expect(maxPointsFor(612.4)).toBe(612);
    expect(maxPointsFor(10)).toBe(100);
    expect(maxPointsFor(9000)).toBe(2000);
  });
});

describe("overlaying runs", () => {
  it("puts runs with different step sets on one ascending x axis, null where a run has no point", () => {
    const [xs, a, b] = alignRuns(
      [
        { run: 1, label: "a", series: series([0, 10, 20], [3, 2, 1]) },
        { run: 2, label: "b", series: series([5, 10, 30], [9, 8, null]) },
      ],
      "step",
    );
    expect(xs).toEqual([0, 5, 10, 20, 30]);
    expect(a).toEqual([3, null, 2, 1, null]);
    expect(b).toEqual([null, 9, 8, null, null]);
  });

  it("keeps a column for a run that never logged the key", () => {
    const [xs, a, b] = alignRuns([{ run: 1, label: "a", series: series([1, 2], [1, 2]) }, { run: 2, label: "b" }], "step");
    expect(xs).toEqual([1, 2]);
    expect(a).toEqual([1, 2]);
    expect(b).toEqual([null, null]);
  });

  it("goes by each run's own epochs on the epoch axis", () => {
    const [xs, a, b] = alignRuns(
      [
        { run: 1, label: "a", series: series([7, 14], [1, 0.5], [1, 2]) },
        { run: 2, label: "b", series: series([4, 8, 12], [2, 1.5, 1], [1, 2, 3]) },
      ],
      "epoch",
    );
    expect(xs).toEqual([1, 2, 3]);
    expect(a).toEqual([1, 0.5, null]);
    expect(b).toEqual([2, 1.5, 1]);
  });

  it("drops values a log axis cannot draw and adds a smoothed line over each faint raw one", () => {
    const curves = [
      { run: 1, label: "a", series: series([1, 2, 3], [0, 2, 4]) },
      { run: 2, label: "b", series: series([2, 3], [1, 1]) },
    ];
    const plain = overlayData(curves, { x: "step", log: true, smoothing: 0 });
    expect(plain.data[1]).toEqual([null, 2, 4]);
    expect(plain.lines.map((l) => l.label)).toEqual(["a", "b"]);
    const smooth = overlayData(curves, { x: "step", log: false, smoothing: 0.5 });
    expect(smooth.lines.map((l) => [l.label, l.raw, l.index])).toEqual([
      ["a (raw)", true, 0],
      ["a", false, 0],
      ["b (raw)", true, 1],
      ["b", false, 1],
    ]);
    expect(smooth.data[4]).toEqual([null, 1, 1]);
  });
});

describe("the comparison's tables and charts", () => {
  const runs = [
    compareRun(1, { final_metrics: { "test/accuracy": 0.9, "val/loss": 0.5, "test/confusion_matrix": [[1]] } }),
    compareRun(2, { final_metrics: { "test/accuracy": 0.95, "val/loss": 0.4 } }),
    compareRun(3, { final_metrics: { "test/accuracy": 0.8 } }),
  ];

  it("draws one chart per key, losses first, train before val", () => {
    const two = series([1, 2], [1, 1]);
    const curves = [
      compareRun(1, { series: { "val/loss": two, "train/loss": two, lr: two, "train/accuracy": two, "test/loss": series([9], [1]) } }),
      compareRun(2, { series: { "val/accuracy": two, "test/loss": series([9], [1]) } }),
    ];
    expect(compareKeys(curves)).toEqual(["train/loss", "val/loss", "train/accuracy", "val/accuracy", "lr"]);
  });

  it("prefers the summary's final values to final_metrics", () => {
    const rows = finalRows([
      compareRun(1, { summary: { final: { "val/loss": 0.2 }, best: {} }, final_metrics: { "val/loss": 9 } }),
      compareRun(2, { final_metrics: { "val/loss": 0.3 } }),
    ]);
    expect(rows).toEqual([{ key: "val/loss", values: [0.2, 0.3], best: [0] }]);
  });

  it("puts final metrics side by side and marks the best (lowest loss, highest accuracy)", () => {
    expect(finalRows(runs)).toEqual([
      { key: "test/accuracy", values: [0.9, 0.95, 0.8], best: [1] },
      { key: "val/loss", values: [0.5, 0.4, null], best: [1] },
    ]);
    const tied = finalRows([
      compareRun(1, { final_metrics: { "train/accuracy": 1, lr: 0.1 } }),
      compareRun(2, { final_metrics: { "train/accuracy": 1, lr: 0.01 } }),
    ]);
    expect(tied).toEqual([
      { key: "train/accuracy", values: [1, 1], best: [0, 1] },
      { key: "lr", values: [0.1, 0.01], best: [] },
    ]);
  });
});

describe("aligning many runs", () => {
  it("finds points that arrive out of order and keeps the last of equal x", () => {
    const [xs, a] = alignRuns([{ run: 1, label: "a", series: { step: [3, 1, 2, 2], epoch: [0, 0, 0, 0], value: [30, 10, 20, 21] } }], "step");
    expect(xs).toEqual([1, 2, 3]);
    expect(a).toEqual([10, 21, 30]);
  });

  it("gives every run exactly its own points among 20 runs on different steps", () => {
    const curves = Array.from({ length: 20 }, (_, r) => {
      const step = Array.from({ length: 500 }, (_, i) => i * (r + 1) + r);
      return { run: r, label: `r${r}`, series: { step, epoch: step.map((s) => s / 100), value: step.map((s) => s + 0.5) } };
    });
    const [xs, ...columns] = alignRuns(curves, "step", Infinity); // exact: no grid
    expect(xs).toEqual([...new Set(curves.flatMap((c) => c.series.step))].sort((p, q) => p - q));
    columns.forEach((column, r) => {
      const own = column.flatMap((v, i) => (v === null ? [] : [[xs[i], v]]));
      expect(own).toEqual(curves[r].series.step.map((s) => [s, s + 0.5]));
    });
  });

  it("snaps 20 runs on different steps to a grid, keeping every point in order near its x", () => {
    const curves = Array.from({ length: 20 }, (_, r) => {
      // 700 points over 100,000 steps, each run on its own steps, with a min/max pair a step apart.
      const step = Array.from({ length: 700 }, (_, i) => Math.floor(i / 2) * 286 + (i % 2) + r * 7);
      return { run: r, label: `r${r}`, series: { step, epoch: step.map((s) => s / 1000), value: step.map((_, i) => i) } };
    });
    const [xs, ...columns] = alignRuns(curves, "step", 4000);
    expect(xs.length).toBeLessThan(4100);
    expect([...xs].sort((p, q) => p - q)).toEqual(xs);
    const cell = (xs[xs.length - 1] - xs[0]) / 4000;
    columns.forEach((column, r) => {
      const kept = column.flatMap((v, i) => (v === null ? [] : [[xs[i], v]]));
      expect(kept.map(([, v]) => v)).toEqual(curves[r].series.value); // all 700, in order
      kept.forEach(([x, v]) => expect(Math.abs(x - curves[r].series.step[v])).toBeLessThanOrEqual(3 * cell));
    });
  });
});
