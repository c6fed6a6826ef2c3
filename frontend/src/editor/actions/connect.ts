// Wires: whether one may be drawn, drawing it (onto a taken input slot it replaces the one there, in
// the same undo step), and saying why one was refused, next to the pointer.
import type { Connection, Edge, FinalConnectionState } from "@xyflow/react";
import { connectInDoc, connectionProblem } from "../connect";
import type { ActionContext, EditorAction } from "./types";

export const canConnect: EditorAction<Connection | Edge, boolean> = {
  name: "canConnect",
  perform: ({ store, ops, readOnly, report }, c) => !readOnly && connectionProblem(store.getState().view, ops, c, report) === null,
};

export const connect: EditorAction<Connection> = {
  name: "connect",
  perform: (ctx, c) => {
    if (!canConnect.perform(ctx, c)) return;
    const view = ctx.store.getState().view;
    const next = connectInDoc(view, c);
    if (next !== view) ctx.store.edit(() => next);
  },
};

export interface ConnectEnd {
  event: MouseEvent | TouchEvent;
  state: FinalConnectionState;
}

/** The reason for a wire let go over a handle that refused it (null: it was not refused there). */
export function refusalMessage(ctx: Pick<ActionContext, "store" | "ops" | "report">, cs: FinalConnectionState): string | null {
  if (cs.isValid !== false || !cs.fromHandle || !cs.toHandle) return null;
  const from = cs.fromHandle;
  const to = cs.toHandle;
  if (from.type === to.type) return from.type === "source" ? "draw the wire from an output to an input" : "an input takes its wire from an output";
  const [src, dst] = from.type === "source" ? [from, to] : [to, from];
  return connectionProblem(ctx.store.getState().view, ctx.ops, { source: src.nodeId, sourceHandle: src.id, target: dst.nodeId, targetHandle: dst.id }, ctx.report);
}

export const refuseConnection: EditorAction<ConnectEnd> = {
  name: "refuseConnection",
  perform: (ctx, { event, state }) => {
    if (ctx.readOnly) return;
    const message = refusalMessage(ctx, state);
    const box = ctx.canvas()?.getBoundingClientRect();
    if (!message || !box) return;
    const point = "changedTouches" in event ? event.changedTouches[0] : event;
    ctx.ui.setRefusal({
      message,
      x: Math.max(8, Math.min(point.clientX - box.left + 14, box.width - 340)),
      y: Math.max(8, Math.min(point.clientY - box.top + 14, box.height - 60)),
      at: Date.now(),
    });
  },
};
