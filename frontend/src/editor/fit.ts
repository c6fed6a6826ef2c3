// Zoom to fit with room for the minimap: the graph is fitted into the canvas less the minimap's
// strip (along the right or along the bottom, whichever leaves the larger zoom), so no node sits under it.
import type { FitViewOptions } from "@xyflow/react";

export interface Box {
  width: number;
  height: number;
}

/** Margin around the graph, in screen pixels, on every side. */
export const FIT_MARGIN = 24;
export const FIT_MAX_ZOOM = 1;

/**
 * React Flow's fitView padding for a canvas of `canvas` size and a graph of `bounds` (flow units).
 * `corner` is how far the minimap (and its toggle) reach in from the canvas's right and bottom
 * edges, in screen pixels; null when nothing sits in the corner.
 */
export function fitPadding(canvas: Box, corner: { right: number; bottom: number } | null, bounds: Box | null): FitViewOptions["padding"] {
  const m = FIT_MARGIN;
  if (!corner) return `${m}px`;
  const { right, bottom } = corner;
  const zoom = (w: number, h: number) =>
    bounds && bounds.width > 0 && bounds.height > 0 ? Math.min(w / bounds.width, h / bounds.height, FIT_MAX_ZOOM) : 0;
  const keepRight = zoom(canvas.width - 2 * m - right, canvas.height - 2 * m) >= zoom(canvas.width - 2 * m, canvas.height - 2 * m - bottom);
  return keepRight
    ? { top: `${m}px`, bottom: `${m}px`, left: `${m}px`, right: `${m + right}px` }
    : { top: `${m}px`, left: `${m}px`, right: `${m}px`, bottom: `${m + bottom}px` };
}

export const MINIMAP_KEY = "netloom.canvas.minimap";

/** Whether the minimap shows: on unless the user hid it (kept per browser). */
export function minimapShown(storage: Pick<Storage, "getItem"> | null): boolean {
  return storage?.getItem(MINIMAP_KEY) !== "hidden";
}
