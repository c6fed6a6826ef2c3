// Presence as the page reads it: the others (never oneself, never someone silent too long), one
// avatar per person, and their selections and drags on the canvas's nodes.
import { describe, expect, it } from "vitest";
import { Awareness, applyAwarenessUpdate, encodeAwarenessUpdate } from "y-protocols/awareness";
import * as Y from "yjs";
import type { CanvasNode } from "../model";
import { withPresence } from "./PresenceUi";
import { type PresenceState, colorFor, peersOf, peopleOf } from "./presence";
import { PRESENT_MS } from "./room";

function state(id: number, username: string, more: Partial<PresenceState> = {}): PresenceState {
  return { user: { id, username, color: colorFor(id) }, cursor: null, selection: [], editing: null, dragging: null, ...more };
}

function joined(...states: PresenceState[]): { mine: Awareness; others: Awareness[] } {
  const mine = new Awareness(new Y.Doc());
  mine.setLocalState(state(1, "alice"));
  const others = states.map((s) => {
    const a = new Awareness(new Y.Doc());
    a.setLocalState(s);
    applyAwarenessUpdate(mine, encodeAwarenessUpdate(a, [a.clientID]), "remote");
    return a;
  });
  return { mine, others };
}

const node = (id: string, x = 0): CanvasNode => ({ id, type: "op", position: { x, y: 0 }, data: { kind: "op", op: "ReLU" } });

describe("presence", () => {
  it("lists the others, not oneself, one avatar per person", () => {
    const { mine } = joined(state(2, "bob"), state(2, "bob"), state(3, "carol", { editing: { node: "fc1", param: "out_features" } }));
    const peers = peersOf(mine);
    expect(peers.map((p) => p.user.username)).toEqual(["bob", "bob", "carol"]);
    expect(peopleOf(peers).map((u) => u.username)).toEqual(["bob", "carol"]);
    expect(peers[2].editing).toEqual({ node: "fc1", param: "out_features" });
  });

  it("drops someone silent for longer than PRESENT_MS", () => {
    const { mine, others } = joined(state(2, "bob"));
    const seen = mine.meta.get(others[0].clientID)!.lastUpdated;
    expect(peersOf(mine, seen + PRESENT_MS - 1)).toHaveLength(1);
    expect(peersOf(mine, seen + PRESENT_MS + 1)).toHaveLength(0);
  });

  it("outlines what others selected and draws their drag, but not over a local drag", () => {
    const { mine } = joined(state(2, "bob", { selection: ["a"], dragging: { id: "b", x: 40, y: 50 } }), state(3, "carol", { dragging: { id: "c", x: 9, y: 9 } }));
    const nodes = withPresence([node("a"), node("b"), { ...node("c", 5), dragging: true }], peersOf(mine));
    expect(nodes[0].className).toBe("peer-selected");
    expect(nodes[0].domAttributes).toEqual({ "data-selected-by": "bob" });
    expect(nodes[1].position).toEqual({ x: 40, y: 50 });
    expect(nodes[2].position).toEqual({ x: 5, y: 0 });
  });
});
