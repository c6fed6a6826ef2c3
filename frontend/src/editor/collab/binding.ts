// The editor store bound to a shared document: the store's committed content is the doc's (every
// change of the doc, local or remote, redraws it), a local commit writes only what it changed into
// the doc with this client's origin, and undo/redo are a Y.UndoManager that tracks that origin only,
// so Undo never takes back someone else's edit. Drags stay local (and in awareness, at most once per
// DRAG_MS) until the drop.
import * as Y from "yjs";
import type { GraphSpec } from "../../api/types";
import type { CanvasDoc } from "../model";
import { EditorStore, type SharedContent } from "../store";
import { type CanvasKeys, type DerivedCanvas, canvasToJson, jsonToCanvas } from "./canvas";
import { TOP_LEVEL, applyJsonDiff, applySpecToYdoc, docJson } from "./doc";
import { throttled } from "./throttle";

/** A node being dragged, in flow coordinates (what awareness carries as `dragging`). */
export interface DragState {
  id: string;
  x: number;
  y: number;
}

/** At most one awareness update per DRAG_MS while a node is dragged (the final place always goes). */
export const DRAG_MS = 50;

export class CollabBinding implements SharedContent {
  /** The origin of this client's own writes: the undo manager tracks only these. */
  readonly origin: { readonly client: number };
  readonly undoManager: Y.UndoManager;
  /** The clientID in base 36: the tag that keeps this client's new ids apart from everyone's. */
  readonly tag: string;
  private keys: CanvasKeys;
  private drawn: CanvasDoc;
  private lastKey: string | null = null;
  private outputs = 0;
  private onDrag: ((drag: DragState | null) => void) | null = null;
  // A drag's places reach awareness at most once per DRAG_MS (the store reports every mouse move).
  private drag = throttled<DragState>((d) => this.onDrag?.(d), DRAG_MS);

  constructor(
    readonly doc: Y.Doc,
    readonly store: EditorStore,
  ) {
    this.origin = { client: doc.clientID };
    this.tag = doc.clientID.toString(36);
    const types = TOP_LEVEL.map((name) => doc.getMap(name));
    this.undoManager = new Y.UndoManager(types, { trackedOrigins: new Set([this.origin]), captureTimeout: EditorStore.COALESCE_MS });
    const derived = jsonToCanvas(docJson(doc));
    this.drawn = derived.canvas;
    this.keys = this.keysOf(derived);
    doc.on("afterTransaction", this.onTransaction);
    const refresh = () => store.sharedChanged();
    this.undoManager.on("stack-item-added", refresh);
    this.undoManager.on("stack-item-popped", refresh);
    this.undoManager.on("stack-cleared", refresh);
    store.attachShared(this, derived.canvas);
  }

  private keysOf({ edgeKeys, outputKeys, inputOrders }: DerivedCanvas): CanvasKeys {
    const known = new Set(this.doc.getMap("outputs").keys());
    return {
      edgeKeys,
      outputKeys,
      inputOrders,
      newOutputKey: () => {
        let key: string;
        do key = `out:${++this.outputs}_${this.tag}`;
        while (known.has(key));
        known.add(key);
        return key;
      },
    };
  }

  private onTransaction = (tr: Y.Transaction): void => {
    if (tr.changed.size === 0) return;
    const derived = jsonToCanvas(docJson(this.doc));
    this.drawn = derived.canvas;
    this.keys = this.keysOf(derived);
    this.store.sharedContent(derived.canvas);
  };

  /** Called while a drag moves (null when it ends): presence shows it to the others. */
  setDragListener(listener: ((drag: DragState | null) => void) | null): void {
    this.onDrag = listener;
  }

  /** A drag moved (throttled to DRAG_MS) or ended (null: the last place goes first, then null at once). */
  dragging(drag: DragState | null): void {
    if (drag) {
      this.drag.push(drag);
      return;
    }
    this.drag.flush();
    this.onDrag?.(null);
  }

  commit(next: CanvasDoc, coalesceKey: string | null): void {
    // A step of its own unless it continues the same field (the manager folds steps closer than COALESCE_MS).
    if (coalesceKey === null || coalesceKey !== this.lastKey) this.undoManager.stopCapturing();
    this.lastKey = coalesceKey;
    const renamed = new Map<string, string>();
    const before = canvasToJson(this.drawn, this.keys);
    const after = canvasToJson(next, this.keys, renamed);
    applyJsonDiff(this.doc, before, after, this.origin);
  }

  replaceSpec(spec: GraphSpec): void {
    this.undoManager.stopCapturing();
    this.lastKey = null;
    applySpecToYdoc(this.doc, spec, this.origin, this.tag);
  }

  undo(): void {
    this.lastKey = null;
    this.undoManager.undo();
  }

  redo(): void {
    this.lastKey = null;
    this.undoManager.redo();
  }

  canUndo(): boolean {
    return this.undoManager.undoStack.length > 0;
  }

  canRedo(): boolean {
    return this.undoManager.redoStack.length > 0;
  }

  destroy(): void {
    this.drag.cancel();
    this.doc.off("afterTransaction", this.onTransaction);
    this.undoManager.destroy();
    this.store.detachShared();
  }
}
