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
