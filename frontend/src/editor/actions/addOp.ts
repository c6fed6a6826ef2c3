// A new op node, selected alone: from the palette (in the middle of the canvas), dropped (centred
// under the pointer, never hidden under the minimap), or from the insert box (its corner where the box was).
import { idBase, nextId } from "../ids";
import { type CanvasNode, NODE_HEIGHT, NODE_WIDTH } from "../model";
import { canvasPoint, clearOf, minimapRect, screenSize } from "./shared";
import type { EditorAction, Point } from "./types";

export interface AddOp {
  op: string;
  /** Where on the flow; else where on the screen (default: the middle of the canvas). */
  at?: Point;
  screen?: Point;
  anchor?: "center" | "corner";
}

export const addOp: EditorAction<AddOp> = {
  name: "addOp",
  perform: (ctx, { op, at, screen, anchor = "center" }) => {
    if (ctx.readOnly) return;
    const { store } = ctx;
    const doc = store.getState().view;
    const id = nextId(idBase(op), new Set(doc.nodes.map((n) => n.id)));
    // A drop under the minimap would hide the new node: it lands just beside the minimap instead.
    const dropped = screen && clearOf(screen, screenSize(ctx, NODE_WIDTH, NODE_HEIGHT), minimapRect(ctx));
    const position = at ?? ctx.flow.screenToFlowPosition(dropped ?? canvasPoint(ctx));
    const node: CanvasNode = {
      id,
      type: "op",
      position:
        anchor === "center"
          ? { x: Math.round(position.x - NODE_WIDTH / 2), y: Math.round(position.y - NODE_HEIGHT / 2) }
          : { x: Math.round(position.x), y: Math.round(position.y) },
      data: { kind: "op", op, params: {} },
      selected: true,
    };
    store.edit((d) => ({ ...d, nodes: [...d.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), node] }));
    ctx.ui.setPanel("inspector");
  },
};
