// How the canvas is viewed: zoom to fit (F), and the minimap shown or hidden.
import type { FitViewOptions } from "@xyflow/react";
import { FIT_MAX_ZOOM, MINIMAP_KEY, fitPadding } from "../fit";
import { type ActionContext, type EditorAction, withMod } from "./types";

/** Fit leaves the corner that the minimap (or its toggle) takes free of nodes. */
export function fitOptions(ctx: Pick<ActionContext, "canvas" | "flow">): FitViewOptions {
  const { flow } = ctx;
  const canvas = ctx.canvas();
  if (!canvas) return { padding: 0.15, maxZoom: FIT_MAX_ZOOM };
  const box = canvas.getBoundingClientRect();
  const overlays = [...canvas.querySelectorAll(".react-flow__minimap, .minimap-toggle-panel")].map((el) => el.getBoundingClientRect());
  const corner = overlays.length
    ? { right: box.right - Math.min(...overlays.map((r) => r.left)), bottom: box.bottom - Math.min(...overlays.map((r) => r.top)) }
    : null;
  const nodes = flow.getNodes();
  const bounds = nodes.length ? flow.getNodesBounds(nodes) : null;
  return { padding: fitPadding({ width: box.width, height: box.height }, corner, bounds), maxZoom: FIT_MAX_ZOOM };
}

/** Zoom to fit; `duration` in ms (0: at once). */
export const fitView: EditorAction<number | void> = {
  name: "fitView",
  keyTest: (e) => !withMod(e) && e.key.toLowerCase() === "f",
  perform: (ctx, duration) => void ctx.flow.fitView({ ...fitOptions(ctx), duration: duration ?? 200 }),
};

/** Fits once the canvas has settled after a change of its content or size. */
export const fitSoon: EditorAction<number | void> = {
  name: "fitSoon",
  perform: (ctx, duration) => void window.setTimeout(() => fitView.perform(ctx, duration), 50),
};

export const toggleMinimap: EditorAction = {
  name: "toggleMinimap",
  perform: ({ ui }) =>
    ui.setShowMinimap((shown) => {
      try {
        if (shown) window.localStorage.setItem(MINIMAP_KEY, "hidden");
        else window.localStorage.removeItem(MINIMAP_KEY);
      } catch {
        // Storage may be off: the choice then lasts for this page only.
      }
      return !shown;
    }),
};
