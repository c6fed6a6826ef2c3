// Two editors on one graph, their Y.Docs joined in memory (each update goes straight to the other,
// or is held back to play "offline"): what the binding must keep true whatever the order of edits.
import { afterEach, describe, expect, it, vi } from "vitest";
import { Awareness } from "y-protocols/awareness";
import * as Y from "yjs";
import { addOp } from "../actions/addOp";
import type { ActionContext } from "../actions/types";
import { canonicalJson, docToSpec } from "../convert";
import { setIdTag } from "../ids";
import { EditorStore } from "../store";
import { CollabBinding, DRAG_MS } from "./binding";
import { specToYdoc, ydocToSpec } from "./doc";

const SPEC = {
  version: 1 as const,
  inputs: [{ id: "x", shape: [1, 4], dtype: "float32" as const }],
  nodes: [{ id: "fc1", op: "Linear", params: { out_features: 8 }, inputs: ["x"] }],
  outputs: ["fc1"],
  layout: { x: { x: 0, y: 0 }, fc1: { x: 0, y: 120 } },
  ui: { output_nodes: [{ source: "fc1", x: 0, y: 240 }] },
};

/** Two (or more) peers; `online` false holds a peer's updates back until it is set true again. */
class Room {
  peers: { doc: Y.Doc; store: EditorStore; binding: CollabBinding; online: boolean; held: Uint8Array[] }[] = [];

  join(seed?: Y.Doc) {
    const doc = new Y.Doc();
    if (seed) Y.applyUpdate(doc, Y.encodeStateAsUpdate(seed));
    else if (this.peers.length) Y.applyUpdate(doc, Y.encodeStateAsUpdate(this.peers[0].doc));
    const store = new EditorStore({ nodes: [], edges: [], extra: {} });
    const binding = new CollabBinding(doc, store);
    const peer = { doc, store, binding, online: true, held: [] as Uint8Array[] };
    doc.on("update", (update: Uint8Array, origin: unknown) => {
      if (origin === "remote") return;
      if (!peer.online) return void peer.held.push(update);
      for (const other of this.peers) if (other !== peer) this.deliver(other, update);
    });
    this.peers.push(peer);
    return peer;
  }

  private deliver(to: Room["peers"][number], update: Uint8Array) {
    if (!to.online) to.held.push(update);
    else Y.applyUpdate(to.doc, update, "remote");
  }

  reconnect(peer: Room["peers"][number]) {
    peer.online = true;
    for (const other of this.peers) {
      if (other === peer) continue;
      Y.applyUpdate(other.doc, Y.encodeStateAsUpdate(peer.doc), "remote");
      Y.applyUpdate(peer.doc, Y.encodeStateAsUpdate(other.doc), "remote");
    }
    peer.held = [];
  }
}

function ctxOf(store: EditorStore): ActionContext {
  return {
    store,
    readOnly: false,
    ops: new Map(),
    flow: { screenToFlowPosition: (p) => p, fitView: async () => true, getNodes: () => [], getNodesBounds: () => ({ x: 0, y: 0, width: 0, height: 0 }) },
    canvas: () => null,
    pointer: () => null,
    report: null,
    team: 1,
    library: null,
    onSave: () => {},
    onOpenBlock: () => {},
    onLibraryChange: () => {},
    ui: { setPanel: () => {}, setInsertAt: () => {}, setRefusal: () => {}, setMaking: () => {}, setBlockProblem: () => {}, setShowMinimap: () => {} },
  } as ActionContext;
}

/** Adds an op as the palette does, with the peer's id tag. */
function add(peer: Room["peers"][number], op: string, at = { x: 300, y: 300 }) {
  setIdTag(peer.binding.tag);
  try {
    addOp.perform(ctxOf(peer.store), { op, at });
  } finally {
    setIdTag(null);
  }
}

const specOf = (peer: Room["peers"][number]) => canonicalJson(docToSpec(peer.store.getState().committed));
const paramOf = (peer: Room["peers"][number], id: string, name: string) =>
  peer.store.getState().committed.nodes.find((n) => n.id === id && n.type === "op")?.data && (peer.store.getState().committed.nodes.find((n) => n.id === id)!.data as { params?: Record<string, unknown> }).params?.[name];

function setParam(peer: Room["peers"][number], id: string, name: string, value: unknown) {
  peer.store.edit((d) => ({ ...d, nodes: d.nodes.map((n) => (n.id === id && n.type === "op" ? { ...n, data: { ...n.data, params: { ...n.data.params, [name]: value } } } : n)) }), `${id}.${name}#1`);
}

function remove(peer: Room["peers"][number], id: string) {
  peer.store.edit((d) => ({ ...d, nodes: d.nodes.filter((n) => n.id !== id), edges: d.edges.filter((e) => e.source !== id && e.target !== id) }));
}

afterEach(() => {
  vi.useRealTimers();
});

describe("shared canvas binding", () => {
  it("draws the seeded doc and derives the same spec as the doc", () => {
    const room = new Room();
    const a = room.join(specToYdoc(SPEC));
    const spec = docToSpec(a.store.getState().committed);
    expect(spec.nodes!.map((n) => n.id)).toEqual(["fc1"]);
    expect(canonicalJson(spec)).toBe(canonicalJson(ydocToSpec(a.doc)));
  });

  it("gives concurrent adds of the same op distinct ids, and every canvas all of them", () => {
    const room = new Room();
    const a = room.join(specToYdoc(SPEC));
    const b = room.join();
    const c = room.join();
    for (const p of [a, b, c]) p.online = false;
    for (const p of [a, b, c]) for (let i = 0; i < 4; i++) add(p, "ReLU", { x: 100 * i, y: 400 });
    for (const p of [a, b, c]) room.reconnect(p);
    const ids = a.store.getState().committed.nodes.filter((n) => n.type === "op" && n.data.op === "ReLU").map((n) => n.id);
    expect(ids).toHaveLength(12);
    expect(new Set(ids).size).toBe(12);
    expect(specOf(b)).toBe(specOf(a));
    expect(specOf(c)).toBe(specOf(a));
  });

  it("converges when one deletes a node while another edits its parameter (the node stays deleted)", () => {
    const room = new Room();
    const a = room.join(specToYdoc(SPEC));
    const b = room.join();
    a.online = false;
    b.online = false;
    remove(a, "fc1");
    setParam(b, "fc1", "out_features", 32);
    room.reconnect(a);
    room.reconnect(b);
    expect(specOf(a)).toBe(specOf(b));
    expect(a.store.getState().committed.nodes.some((n) => n.id === "fc1")).toBe(false);
  });

  it("resolves one parameter edited by two people the same way for both", () => {
    const room = new Room();
    const a = room.join(specToYdoc(SPEC));
    const b = room.join();
    a.online = false;
    b.online = false;
    setParam(a, "fc1", "out_features", 16);
    setParam(b, "fc1", "out_features", 64);
    room.reconnect(a);
    room.reconnect(b);
    expect(paramOf(a, "fc1", "out_features")).toBe(paramOf(b, "fc1", "out_features"));
    expect([16, 64]).toContain(paramOf(a, "fc1", "out_features"));
  });

  it("undoes only the person's own edits", () => {
    const room = new Room();
    const a = room.join(specToYdoc(SPEC));
    const b = room.join();
    setParam(a, "fc1", "out_features", 16);
    add(b, "ReLU");
    expect(b.store.getState().canUndo).toBe(true);
    expect(a.store.getState().canUndo).toBe(true);
    a.store.undo();
    expect(paramOf(b, "fc1", "out_features")).toBe(8);
    // b's node is still there, on both canvases.
    for (const p of [a, b]) expect(p.store.getState().committed.nodes.filter((n) => n.type === "op").length).toBe(2);
    b.store.undo();
    for (const p of [a, b]) expect(p.store.getState().committed.nodes.filter((n) => n.type === "op").length).toBe(1);
    a.store.redo();
    expect(paramOf(b, "fc1", "out_features")).toBe(16);
  });

  it("keeps a drag local (and in presence) until the drop, then writes it once", () => {
    const room = new Room();
    const a = room.join(specToYdoc(SPEC));
    const b = room.join();
    const drags: unknown[] = [];
    a.binding.setDragListener((d) => drags.push(d));
    let updates = 0;
    a.doc.on("update", () => updates++);
    for (let i = 1; i <= 5; i++) a.store.onNodesChange([{ type: "position", id: "fc1", position: { x: i * 10, y: 120 }, dragging: true }]);
    expect(updates).toBe(0);
    expect(b.store.getState().committed.nodes.find((n) => n.id === "fc1")!.position).toEqual({ x: 0, y: 120 });
    expect(a.store.getState().view.nodes.find((n) => n.id === "fc1")!.position).toEqual({ x: 50, y: 120 });
    a.store.onNodesChange([{ type: "position", id: "fc1", position: { x: 60.4, y: 130 }, dragging: false }]);
    expect(updates).toBe(1);
    expect(drags.at(-2)).toEqual({ id: "fc1", x: 50, y: 120 });
    expect(drags.at(-1)).toBeNull();
    expect(b.store.getState().committed.nodes.find((n) => n.id === "fc1")!.position).toEqual({ x: 60, y: 130 });
    a.store.undo();
    expect(b.store.getState().committed.nodes.find((n) => n.id === "fc1")!.position).toEqual({ x: 0, y: 120 });
  });

  it("sends a drag's places to awareness at most once per DRAG_MS, the last place always", () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const room = new Room();
    const a = room.join(specToYdoc(SPEC));
    const awareness = new Awareness(a.doc);
    const sent: unknown[] = [];
    const record = () => sent.push((awareness.getLocalState() as { dragging?: unknown }).dragging);
    awareness.on("change", record);
    a.binding.setDragListener((d) => awareness.setLocalStateField("dragging", d));
    // 40 mouse moves, one every 5 ms (200 ms).
    for (let i = 1; i <= 40; i++) {
      a.store.onNodesChange([{ type: "position", id: "fc1", position: { x: i, y: 120 }, dragging: true }]);
      vi.advanceTimersByTime(5);
    }
    expect(sent.length).toBeLessThanOrEqual(200 / DRAG_MS + 1);
    expect(sent.length).toBeGreaterThanOrEqual(2);
    // The pointer rests: the last place goes out once the interval is up.
    vi.advanceTimersByTime(DRAG_MS);
    expect(sent.at(-1)).toEqual({ id: "fc1", x: 40, y: 120 });
    const count = sent.length;
    vi.advanceTimersByTime(10 * DRAG_MS);
    expect(sent.length).toBe(count);
    // A move and the drop within one interval: that place, then the end, both at once.
    a.store.onNodesChange([{ type: "position", id: "fc1", position: { x: 41, y: 121 }, dragging: true }]);
    a.store.onNodesChange([{ type: "position", id: "fc1", position: { x: 42, y: 122 }, dragging: true }]);
    a.store.onNodesChange([{ type: "position", id: "fc1", position: { x: 42, y: 122 }, dragging: false }]);
    expect(sent.slice(-2)).toEqual([{ id: "fc1", x: 42, y: 122 }, null]);
    awareness.off("change", record);
    a.binding.destroy();
    awareness.destroy();
  });

  it("keeps a remote drag-in-progress out of the local canvas while the local one drags", () => {
    const room = new Room();
    const a = room.join(specToYdoc(SPEC));
    const b = room.join();
    a.store.onNodesChange([{ type: "position", id: "fc1", position: { x: 77, y: 88 }, dragging: true }]);
    setParam(b, "fc1", "out_features", 9);
    const fc1 = a.store.getState().view.nodes.find((n) => n.id === "fc1")!;
    expect(fc1.position).toEqual({ x: 77, y: 88 });
    expect(paramOf(a, "fc1", "out_features")).toBe(9);
  });

  it("merges both sides' work after an offline spell", () => {
    const room = new Room();
    const a = room.join(specToYdoc(SPEC));
    const b = room.join();
    b.online = false;
    add(a, "ReLU");
    add(b, "Tanh");
    setParam(b, "fc1", "out_features", 5);
    room.reconnect(b);
    const ops = a.store.getState().committed.nodes.filter((n) => n.type === "op").map((n) => (n.data as { op: string }).op).sort();
    expect(ops).toEqual(["Linear", "ReLU", "Tanh"]);
    expect(paramOf(a, "fc1", "out_features")).toBe(5);
    expect(specOf(a)).toBe(specOf(b));
  });

  it("keeps the inputs' order (the model's signature) through live edits, an input added and a new joiner", () => {
    const TWO = {
      version: 1 as const,
      inputs: [
        { id: "x", shape: [1, 4], dtype: "float32" as const },
        { id: "a_mask", shape: [1, 4], dtype: "float32" as const },
      ],
      nodes: [{ id: "masked", op: "Mul", inputs: ["x", "a_mask"] }],
      outputs: ["masked"],
      layout: { x: { x: 0, y: 0 }, a_mask: { x: 200, y: 0 }, masked: { x: 100, y: 120 } },
    };
    const room = new Room();
    const a = room.join(specToYdoc(TWO));
    const b = room.join();
    const inputIds = (spec: { inputs: { id: string }[] }) => spec.inputs.map((i) => i.id);
    expect(inputIds(docToSpec(b.store.getState().committed))).toEqual(["x", "a_mask"]);
    // b moves a_mask (a live edit through the canvas); a deletes nothing, both keep the order.
    b.store.onNodesChange([{ type: "position", id: "a_mask", position: { x: 260, y: 10 }, dragging: false }]);
    for (const p of [a, b]) expect(inputIds(ydocToSpec(p.doc))).toEqual(["x", "a_mask"]);
    expect(inputIds(docToSpec(a.store.getState().committed))).toEqual(["x", "a_mask"]);
    // a adds an input whose id sorts first: it comes last (order = max + 1), on every side.
    a.store.edit((d) => ({
      ...d,
      nodes: [...d.nodes, { id: "_aa", type: "input", position: { x: 400, y: 0 }, data: { kind: "input", shape: [1, 4], dtype: "float32" } }],
    }));
    expect((a.doc.getMap("inputs").get("_aa") as Y.Map<unknown>).get("order")).toBe(2);
    for (const p of [a, b]) expect(inputIds(ydocToSpec(p.doc))).toEqual(["x", "a_mask", "_aa"]);
    const c = room.join();
    expect(inputIds(docToSpec(c.store.getState().committed))).toEqual(["x", "a_mask", "_aa"]);
    expect(specOf(c)).toBe(specOf(a));
  });

  it("gives an older document's inputs (no order) their derived order when a browser first edits", () => {
    const room = new Room();
    const seed = specToYdoc({ ...SPEC, inputs: [{ id: "x", shape: [1, 4] }, { id: "b", shape: [2] }] });
    for (const input of (seed.getMap("inputs") as Y.Map<Y.Map<unknown>>).values()) input.delete("order");
    const a = room.join(seed);
    const before = ydocToSpec(a.doc).inputs.map((i) => i.id);
    expect(before).toEqual(["b", "x"]);
    setParam(a, "fc1", "out_features", 4);
    expect(ydocToSpec(a.doc).inputs.map((i) => i.id)).toEqual(before);
    const orders = a.doc.getMap("inputs").toJSON() as Record<string, { order?: number }>;
    expect([orders.b.order, orders.x.order]).toEqual([0, 1]);
  });

  it("restores a whole spec as one undoable step that keeps output keys", () => {
    const room = new Room();
    const a = room.join(specToYdoc(SPEC));
    const outKeys = [...a.doc.getMap("outputs").keys()];
    a.store.editSpec({ ...SPEC, nodes: [{ ...SPEC.nodes[0], params: { out_features: 3 } }] });
    expect(paramOf(a, "fc1", "out_features")).toBe(3);
    expect([...a.doc.getMap("outputs").keys()]).toEqual(outKeys);
    a.store.undo();
    expect(paramOf(a, "fc1", "out_features")).toBe(8);
  });
});
