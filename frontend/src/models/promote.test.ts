import { describe, expect, it } from "vitest";
import { formatDelta, metricDiff, metricDirection } from "./promote";

describe("the figures a promotion weighs", () => {
  it("knows which way a metric improves from its name, and says so only when it knows", () => {
    expect(metricDirection("val/loss")).toBe("min");
    expect(metricDirection("test/mae")).toBe("min");
    expect(metricDirection("val/accuracy")).toBe("max");
    expect(metricDirection("val/macro_f1")).toBe("max");
    expect(metricDirection("val/samples_per_s")).toBeNull();
  });

  it("sets each figure beside production's with the change and whether it is better", () => {
    const rows = metricDiff(
      { "val/accuracy": 0.96, "val/loss": 0.2, "val/samples": 100, "test/accuracy": 0.9, lr: 0.1 },
      { "val/accuracy": 0.9, "val/loss": 0.25, "val/samples": 90 },
    );
    expect(rows.map((r) => [r.key, r.before, r.after, r.verdict])).toEqual([
      ["test/accuracy", null, 0.9, null],
      ["val/accuracy", 0.9, 0.96, "better"],
      ["val/loss", 0.25, 0.2, "better"],
      ["val/samples", 90, 100, null],
    ]);
    expect(rows[1].delta).toBeCloseTo(0.06);
    expect(metricDiff({ "val/loss": 0.3 }, { "val/loss": 0.2 })[0].verdict).toBe("worse");
    expect(metricDiff({ "val/loss": 0.2 }, { "val/loss": 0.2 })[0].verdict).toBe("same");
    expect(metricDiff({ "val/loss": 0.2 }, null)[0]).toMatchObject({ before: null, delta: null, verdict: null });
  });

  it("writes a change with its sign", () => {
    expect(formatDelta(0.0312)).toBe("+0.0312");
    expect(formatDelta(-0.00451)).toBe("−0.0045");
    expect(formatDelta(0)).toBe("0");
    expect(formatDelta(null)).toBe("–");
    expect(formatDelta(1234.5)).toBe("+1234.5");
  });
});
