// Auto-layout (L): every node placed again by the layered layout, then the view fitted to it.
import { layoutPositions } from "../layout";
import { type EditorAction, withMod } from "./types";
import { fitSoon } from "./view";

export const autoLayout: EditorAction = {
  name: "autoLayout",
  keyTest: (e) => !withMod(e) && e.key.toLowerCase() === "l",
  perform: (ctx) => {
    if (ctx.readOnly) return;
    ctx.store.edit((d) => {
      const positions = layoutPositions(
        d.nodes.map((n) => n.id),
        d.edges,
      );
      return { ...d, nodes: d.nodes.map((n) => ({ ...n, position: positions.get(n.id)! })) };
    });
    fitSoon.perform(ctx);
  },
};
