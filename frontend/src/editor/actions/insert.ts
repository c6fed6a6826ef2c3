// The insert box: a search over the ops, opened where the pane was double-clicked, or with "/" or
// "A" where the pointer is (the upper middle of the canvas when it has not moved over it).
import { canvasPoint } from "./shared";
import { type EditorAction, type Point, withMod } from "./types";

export const openInsert: EditorAction<Point | void> = {
  name: "openInsert",
  keyTest: (e) => !withMod(e) && !e.altKey && (e.key === "/" || e.key.toLowerCase() === "a"),
  preventDefault: true,
  perform: (ctx, at) => {
    const canvas = ctx.canvas();
    if (ctx.readOnly || !canvas) return;
    const screen = at ?? ctx.pointer() ?? canvasPoint(ctx, 1 / 3, { x: 300, y: 200 });
    const box = canvas.getBoundingClientRect();
    ctx.ui.setInsertAt({ screen: { x: screen.x - box.left, y: screen.y - box.top }, flow: ctx.flow.screenToFlowPosition(screen) });
  },
};
