import { describe, expect, it } from "vitest";
import { limitsText, placementText } from "./placement";

describe("placementText", () => {
  it("names the worker and device of a running run", () => {
    expect(placementText({ status: "running", worker: "w1@gpu-3", device: "cuda:0,cuda:1" })).toBe("training on w1@gpu-3 (cuda:0,cuda:1)");
  });

  it("gives a queued run's position and why it waits", () => {
    const queue = { position: 3, ahead: 2, waiting_for: "behind" as const, detail: "behind 2 queued runs" };
    expect(placementText({ status: "queued", worker: "", queue })).toBe("queued: #3, waiting its turn (behind 2 queued runs)");
    const limited = { ...queue, waiting_for: "team_limit" as const, detail: "team A has 2 of its 2 allowed runs training" };
    expect(placementText({ status: "queued", worker: "", queue: limited })).toContain("waiting for the team's limit");
  });

  it("says nothing for a queued run without queue information", () => {
    expect(placementText({ status: "queued", worker: "", queue: null })).toBe("");
  });
});

describe("limitsText", () => {
  it("lists only the limits a team has", () => {
    expect(limitsText({ max_concurrent_runs: 2, max_devices_per_run: null })).toBe("team limits: at most 2 runs at once");
    expect(limitsText({ max_concurrent_runs: 1, max_devices_per_run: 4 })).toBe("team limits: at most 1 run at once, at most 4 devices per run");
    expect(limitsText({ max_concurrent_runs: null, max_devices_per_run: null })).toBe("");
  });
});
