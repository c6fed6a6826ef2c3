import { describe, expect, it } from "vitest";
import { clearOf } from "./shared";

const minimap = { left: 1000, top: 600, right: 1200, bottom: 750 };
const node = { width: 160, height: 60 };

describe("clearOf (a drop never hides the node under the minimap)", () => {
  it("leaves a drop clear of the minimap where it is", () => {
    expect(clearOf({ x: 500, y: 300 }, node, minimap)).toEqual({ x: 500, y: 300 });
    expect(clearOf({ x: 1100, y: 680 }, node, null)).toEqual({ x: 1100, y: 680 });
  });

  it("moves a drop near the minimap's left edge to its left", () => {
    expect(clearOf({ x: 1020, y: 700 }, node, minimap)).toEqual({ x: 1000 - 8 - 80, y: 700 });
  });

  it("moves a drop near the minimap's top edge above it", () => {
    expect(clearOf({ x: 1150, y: 610 }, node, minimap)).toEqual({ x: 1150, y: 600 - 8 - 30 });
  });

  it("counts a node that only overlaps with its edge", () => {
    const moved = clearOf({ x: 930, y: 700 }, node, minimap);
    expect(moved.x + node.width / 2).toBeLessThanOrEqual(minimap.left);
  });
});
