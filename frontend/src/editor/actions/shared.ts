// What several actions need: where the middle of the canvas is, and an API error in words.
import { ApiError } from "../../api/client";
import type { ActionContext, Point } from "./types";

/** A point of the canvas in screen coordinates: its middle by default (`down`: how far down, 0..1). */
export function canvasPoint(ctx: Pick<ActionContext, "canvas">, down = 0.5, fallback: Point = { x: 400, y: 300 }): Point {
  const box = ctx.canvas()?.getBoundingClientRect();
  return box ? { x: box.left + box.width / 2, y: box.top + box.height * down } : fallback;
}

/** An API error with its field problems, in one line. */
export function messageOf(e: unknown): string {
  if (e instanceof ApiError && e.fields) {
    const parts = Object.entries(e.fields).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join("; ") : String(v)}`);
    if (parts.length) return `${e.message} (${parts.join(" · ")})`;
  }
  return (e as Error).message;
}

/** A screen rectangle (a DOMRect's fields). */
export interface ScreenRect {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/**
 * Where a node centred at `center` (screen size `size`) goes so that it is not hidden under `rect`
 * (the minimap): unchanged when clear, else moved left or up out of it, whichever is the shorter move.
 */
export function clearOf(center: Point, size: { width: number; height: number }, rect: ScreenRect | null, gap = 8): Point {
  if (!rect) return center;
  const box = { left: center.x - size.width / 2, right: center.x + size.width / 2, top: center.y - size.height / 2, bottom: center.y + size.height / 2 };
  const overlaps = box.left < rect.right && box.right > rect.left && box.top < rect.bottom && box.bottom > rect.top;
  if (!overlaps) return center;
  const left = { x: rect.left - gap - size.width / 2, y: center.y };
  const up = { x: center.x, y: rect.top - gap - size.height / 2 };
  return center.x - left.x <= center.y - up.y ? left : up;
}

/** The screen area the minimap and its toggle cover in the canvas, or null when it is hidden. */
export function minimapRect(ctx: Pick<ActionContext, "canvas">): ScreenRect | null {
  const canvas = ctx.canvas();
  const parts = [canvas?.querySelector(".react-flow__minimap"), canvas?.querySelector(".minimap-toggle-panel")]
    .filter((el): el is Element => !!el)
    .map((el) => el.getBoundingClientRect())
    .filter((r) => r.width > 0 && r.height > 0);
  const map = canvas?.querySelector(".react-flow__minimap");
  if (!map || parts.length === 0) return null;
  return {
    left: Math.min(...parts.map((r) => r.left)),
    top: Math.min(...parts.map((r) => r.top)),
    right: Math.max(...parts.map((r) => r.right)),
    bottom: Math.max(...parts.map((r) => r.bottom)),
  };
}

/** A node's size on screen at the canvas's zoom (read from two points a known distance apart). */
export function screenSize(ctx: Pick<ActionContext, "flow">, width: number, height: number): { width: number; height: number } {
  const a = ctx.flow.screenToFlowPosition({ x: 0, y: 0 });
  const b = ctx.flow.screenToFlowPosition({ x: 100, y: 0 });
  const zoom = b.x - a.x > 0 ? 100 / (b.x - a.x) : 1;
  return { width: width * zoom, height: height * zoom };
}
