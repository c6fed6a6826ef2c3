import { describe, expect, it } from "vitest";
import { formatMetric, formatTicks } from "./format";

describe("metric values", () => {
  it("read with sensible digits", () => {
    expect(formatMetric(0.96123456)).toBe("0.9612");
    expect(formatMetric(17187.8163)).toBe("17187.8");
    expect(formatMetric(1.2e-5)).toBe("1.20e-5");
    expect(formatMetric(4)).toBe("4");
    expect(formatMetric(null)).toBe("–");
  });
});

describe("axis ticks", () => {
  it("keep the digits their spacing needs, so no two ticks read the same", () => {
    expect(formatTicks([0, 0.0005, 0.001, 0.0015, 0.002])).toEqual(["0.0000", "0.0005", "0.0010", "0.0015", "0.0020"]);
    expect(formatTicks([0.4, 0.6, 0.8, 1])).toEqual(["0.4", "0.6", "0.8", "1.0"]);
    expect(formatTicks([0, 20, 40, 60])).toEqual(["0", "20", "40", "60"]);
    expect(formatTicks([1e-5, 2e-5, 3e-5])).toEqual(["1e-5", "2e-5", "3e-5"]);
    expect(formatTicks([0, 1e6, 2e6])).toEqual(["0", "1e+6", "2e+6"]);
    expect(formatTicks([0.5])).toEqual(["0.5000"]);
  });
});
