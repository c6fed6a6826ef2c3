import { describe, expect, it } from "vitest";
import { CODE_WIDTH_KEY, CODE_WIDTH_MIN, clampCodeWidth, storedCodeWidth } from "./CodePanel";

describe("the code panel's width", () => {
  it("stays between its minimum and what leaves room for the palette and the canvas", () => {
    expect(clampCodeWidth(100, 1280)).toBe(CODE_WIDTH_MIN);
    expect(clampCodeWidth(520.4, 1280)).toBe(520);
    expect(clampCodeWidth(2000, 1280)).toBe(1280 - 560);
    expect(clampCodeWidth(2000, 700)).toBe(CODE_WIDTH_MIN);
  });

  it("comes back from storage, clamped to this window", () => {
    const storage = (v: string | null) => ({ getItem: (k: string) => (k === CODE_WIDTH_KEY ? v : null) });
    expect(storedCodeWidth(storage("640"), 1600)).toBe(640);
    expect(storedCodeWidth(storage("900"), 1280)).toBe(720);
    expect(storedCodeWidth(storage(null), 1280)).toBeNull();
    expect(storedCodeWidth(storage("wide"), 1280)).toBeNull();
    expect(storedCodeWidth(null, 1280)).toBeNull();
  });
});
