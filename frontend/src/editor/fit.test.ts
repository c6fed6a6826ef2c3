import { describe, expect, it } from "vitest";
import { fitPadding, minimapShown, MINIMAP_KEY } from "./fit";

const canvas = { width: 800, height: 600 };
// A 200x150 minimap 15 px in from the corner.
const minimap = { right: 230, bottom: 180 };

describe("zoom to fit beside the minimap", () => {
  it("keeps a strip along the right for a tall graph", () => {
    expect(fitPadding(canvas, minimap, { width: 200, height: 1200 })).toEqual({ top: "24px", bottom: "24px", left: "24px", right: "254px" });
  });

  it("keeps a strip along the bottom for a wide graph", () => {
    expect(fitPadding(canvas, minimap, { width: 1600, height: 200 })).toEqual({ top: "24px", left: "24px", right: "24px", bottom: "204px" });
  });

  it("uses the whole canvas when the minimap is hidden", () => {
    expect(fitPadding(canvas, null, { width: 200, height: 1200 })).toBe("24px");
  });

  it("remembers that the user hid the minimap", () => {
    expect(minimapShown(null)).toBe(true);
    expect(minimapShown({ getItem: () => null })).toBe(true);
    expect(minimapShown({ getItem: (k: string) => (k === MINIMAP_KEY ? "hidden" : null) })).toBe(false);
  });
});
