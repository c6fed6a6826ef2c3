// A starter template replaces the canvas (after asking, when there is work on it); Undo brings it back.
import { specToDoc } from "../convert";
import { TEMPLATES } from "../templates";
import type { EditorAction } from "./types";
import { fitSoon } from "./view";

export const loadTemplate: EditorAction<string> = {
  name: "loadTemplate",
  perform: (ctx, key) => {
    const t = TEMPLATES.find((x) => x.key === key);
    if (!t || ctx.readOnly) return;
    const hasWork = ctx.store.getState().committed.nodes.some((n) => n.type === "op");
    if (hasWork && !window.confirm(`Replace the canvas with the ${t.label} template? (Undo brings it back.)`)) return;
    ctx.store.edit(() => specToDoc(t.spec));
    fitSoon.perform(ctx, 0);
  },
};
