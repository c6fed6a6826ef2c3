import { describe, expect, it } from "vitest";
import { finishedTrials, paramText, progressText, strategyText } from "./sweepText";
import type { Sweep } from "./types";

describe("a sweep in words", () => {
  const progress = { total: 8, done: 5, running: 2, queued: 1, pruned: 2, failed: 0 };
  it("counts the trials that ended", () => {
    expect(finishedTrials({ progress })).toBe(5);
    expect(progressText({ progress, budget: 8 })).toBe("5 / 8 trials finished · 2 pruned · 2 running · 1 queued");
    const trials = [{ state: "complete" }, { state: "pruned" }, { state: "running" }] as Sweep["trials"];
    expect(finishedTrials({ progress, trials })).toBe(2);
  });

  it("names the strategy and the parameters", () => {
    expect(strategyText({ strategy: "tpe", pruner: "median" })).toBe("TPE (Bayesian), median pruning");
    expect(paramText({ "optimizer.lr": 0.00312, "nodes.fc1.out_features": 128, "optimizer.name": "adam" })).toBe(
      "optimizer.lr=0.0031, fc1.out_features=128, optimizer.name=adam",
    );
  });
});
