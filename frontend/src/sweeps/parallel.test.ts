import { describe, expect, it } from "vitest";
import { OBJECTIVE_KEY, colourFor, drawnValue, makeAxis, position, sweepAxes, ticks, trialPoints } from "./parallel";
import type { SearchSpace, SweepTrial } from "./types";

function trial(number: number, params: SweepTrial["params"], value: number | null, state: SweepTrial["state"] = "complete", intermediate: [number, number][] = []): SweepTrial {
  return { number, run: 100 + number, state, params, value, intermediate, reason: "" };
}

const space: SearchSpace = {
  "optimizer.lr": { type: "float", low: 1e-4, high: 1e-1, log: true },
  "nodes.fc1.out_features": { type: "categorical", choices: [16, 64, 256] },
};

describe("axes of the parallel-coordinates plot", () => {
  it("scales a linear axis over the space's range and the values", () => {
    const a = makeAxis("p", "p", [0.1, 0.3], { type: "float", low: 0, high: 0.5 });
    expect(a.kind).toBe("linear");
    expect(position(a, 0)).toBe(0);
    expect(position(a, 0.25)).toBeCloseTo(0.5);
    expect(position(a, 0.5)).toBe(1);
    expect(position(a, "x")).toBeNull();
  });

  it("puts a log dimension on a log axis: each decade the same height", () => {
    const a = makeAxis("optimizer.lr", "lr", [0.001], space["optimizer.lr"]);
    expect(a.kind).toBe("log");
    expect(position(a, 1e-4)).toBeCloseTo(0);
    expect(position(a, 1e-3)).toBeCloseTo(1 / 3);
    expect(position(a, 1e-2)).toBeCloseTo(2 / 3);
    expect(position(a, 0)).toBeNull();
    expect(ticks(a).map((t) => t.value)).toEqual(["1e-4", "0.001", "0.01", "0.1"]);
  });

  it("spaces categorical choices evenly, in the space's order, values outside it appended", () => {
    const a = makeAxis("w", "w", [64, 16], space["nodes.fc1.out_features"]);
    expect(a.kind).toBe("categorical");
    expect(a.categories).toEqual(["16", "64", "256"]);
    expect([16, 64, 256].map((v) => position(a, v))).toEqual([0, 0.5, 1]);
    expect(ticks(a).map((t) => [t.value, t.at])).toEqual([["16", 0], ["64", 0.5], ["256", 1]]);
    const strings = makeAxis("opt", "opt", ["adam", "sgd", "adam"]);
    expect(strings.categories).toEqual(["adam", "sgd"]);
    expect(position(makeAxis("one", "one", ["x"]), "x")).toBe(0.5);
  });

  it("widens an axis whose values are all equal and gives linear ticks even steps", () => {
    const a = makeAxis("loss", "loss", [0.5, 0.5]);
    expect(a.min).toBeLessThan(0.5);
    expect(a.max).toBeGreaterThan(0.5);
    expect(position(a, 0.5)).toBeCloseTo(0.5);
    const b = makeAxis("loss", "loss", [0, 1]);
    expect(ticks(b).map((t) => t.value)).toEqual(["0", "0.25", "0.5", "0.75", "1"]);
  });
});

describe("lines of trials", () => {
  const trials = [
    trial(0, { "optimizer.lr": 1e-4, "nodes.fc1.out_features": 16 }, 1.0),
    trial(1, { "optimizer.lr": 1e-1, "nodes.fc1.out_features": 256 }, 0.2),
    trial(2, { "optimizer.lr": 1e-2, "nodes.fc1.out_features": 64 }, null, "pruned", [[1, 0.9], [2, 0.6]]),
    trial(3, { "optimizer.lr": 1e-3, "nodes.fc1.out_features": 64 }, null, "running"),
  ];
  const box = { width: 300, height: 110, left: 0, right: 0, top: 10, bottom: 0 };

  it("draws a pruned trial at its last reported value and leaves out trials without a value", () => {
    expect(drawnValue(trials[2])).toBe(0.6);
    expect(drawnValue(trials[3])).toBeNull();
  });

  it("has one axis per searched key plus the objective, and one point per axis", () => {
    const axes = sweepAxes(space, trials, "val/loss");
    expect(axes.map((a) => a.key)).toEqual(["optimizer.lr", "nodes.fc1.out_features", OBJECTIVE_KEY]);
    expect(axes[1].label).toBe("fc1.out_features");
    // Objective axis over the drawn values 0.2 .. 1.0.
    expect(trialPoints(axes, trials[0], box)).toBe("0,110 150,110 300,10");
    expect(trialPoints(axes, trials[1], box)).toBe("0,10 150,10 300,110");
    expect(trialPoints(axes, trials[2], box)).toBe("0,43.3 150,60 300,60");
    expect(trialPoints(axes, trials[3], box)).toBeNull();
  });

  it("colours from orange (poor) to dark blue (good)", () => {
    expect(colourFor(0)).toBe("rgb(230, 140, 20)");
    expect(colourFor(0.5)).toBe("rgb(33, 145, 140)");
    expect(colourFor(1)).toBe("rgb(30, 30, 110)");
    expect(colourFor(2)).toBe(colourFor(1));
  });
});
