import { describe, expect, it } from "vitest";
import { formatMetric } from "./format";

describe("metric values", () => {
  it("read with sensible digits", () => {
    expect(formatMetric(0.96123456)).toBe("0.9612");
    expect(formatMetric(17187.8163)).toBe("17187.8");
    expect(formatMetric(1.2e-5)).toBe("1.20e-5");
    expect(formatMetric(4)).toBe("4");
    expect(formatMetric(null)).toBe("–");
  });
});
