// The editor's state outside React: the canvas as the user sees it, and the undo history of its content.
import { type EdgeChange, type NodeChange, applyEdgeChanges, applyNodeChanges } from "@xyflow/react";
import type { GraphSpec } from "../api/types";
import { canonicalJson, specToDoc } from "./convert";
import { type History, historyInit, historyPush, historyRedo, historyUndo } from "./history";
import { type CanvasDoc, type CanvasEdge, type CanvasNode, cleanDoc } from "./model";

export interface EditorState {
  /** What the canvas draws, with selection and positions mid-drag. */
  view: CanvasDoc;
  /** The committed content (undo steps); the spec, validation and save follow this one. */
  committed: CanvasDoc;
  canUndo: boolean;
  canRedo: boolean;
}

type Listener = () => void;

/**
 * Content shared with others (collab/binding.ts): it takes the committed changes and keeps the
 * history; the store hears back through `sharedContent` whenever the content changes, by anyone.
 */
export interface SharedContent {
  /** Writes a committed change (what the canvas holds now, without view-only state). */
  commit(next: CanvasDoc, coalesceKey: string | null): void;
  /** Puts a whole spec on the canvas (a revision restored): an undoable step. */
  replaceSpec(spec: GraphSpec): void;
  /** A drag in progress (null: it ended): view-only, others see it through presence. */
  dragging(drag: { id: string; x: number; y: number } | null): void;
  undo(): void;
  redo(): void;
  canUndo(): boolean;
  canRedo(): boolean;
}

/** The new committed content drawn on the view: selection, sizes and a drag in progress are kept. */
function redraw(view: CanvasDoc, content: CanvasDoc): CanvasDoc {
  const oldNodes = new Map(view.nodes.map((n) => [n.id, n]));
  const nodes = content.nodes.map((n) => {
    const old = oldNodes.get(n.id);
    if (!old) return n;
    const position = old.dragging ? old.position : n.position;
    const samePlace = position.x === old.position.x && position.y === old.position.y;
    if (samePlace && old.type === n.type && canonicalJson(old.data) === canonicalJson(n.data)) return old;
    return { ...old, type: n.type, data: n.data, position } as CanvasNode;
  });
  const oldEdges = new Map(view.edges.map((e) => [e.id, e]));
  const edges = content.edges.map((e) => {
    const old = oldEdges.get(e.id);
    if (!old) return e;
    if (old.source === e.source && old.target === e.target && old.sourceHandle === e.sourceHandle && old.targetHandle === e.targetHandle) return old;
    return { ...e, selected: old.selected };
  });
  return { nodes, edges, extra: content.extra };
}

function withSelection(doc: CanvasDoc, selected: Set<string>): CanvasDoc {
  if (selected.size === 0) return doc;
  return { ...doc, nodes: doc.nodes.map((n) => (selected.has(n.id) ? { ...n, selected: true } : n)) };
}

export class EditorStore {
  private history: History<CanvasDoc>;
  private state: EditorState;
  private listeners = new Set<Listener>();
  private lastCommitAt = 0;
  private shared: SharedContent | null = null;
  private sharedDoc: CanvasDoc | null = null;
  /** Bumped by every change of the shared content, so a commit knows whether it drew already. */
  private sharedVersion = 0;

  /** Typing pauses longer than this start a new undo step even in the same field. */
  static COALESCE_MS = 1500;

  constructor(initial: CanvasDoc) {
    const clean = cleanDoc(initial);
    this.history = historyInit(clean);
    this.state = { view: initial, committed: clean, canUndo: false, canRedo: false };
  }

  subscribe = (listener: Listener): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  getState = (): EditorState => this.state;

  private emit(view: CanvasDoc): void {
    const shared = this.shared;
    this.state = {
      view,
      committed: shared && this.sharedDoc ? this.sharedDoc : this.history.present,
      canUndo: shared ? shared.canUndo() : this.history.past.length > 0,
      canRedo: shared ? shared.canRedo() : this.history.future.length > 0,
    };
    for (const l of this.listeners) l();
  }

  /** Binds the store to shared content, which starts as `content` (the local history is dropped). */
  attachShared(shared: SharedContent, content: CanvasDoc): void {
    this.shared = shared;
    this.sharedDoc = cleanDoc(content);
    this.history = historyInit(this.sharedDoc);
    this.emit(redraw(this.state.view, content));
  }

  detachShared(): void {
    if (this.sharedDoc) this.history = historyInit(this.sharedDoc);
    this.shared = null;
    this.sharedDoc = null;
  }

  isShared(): boolean {
    return this.shared !== null;
  }

  /** The shared content changed (anyone's edit, an undo): the canvas draws it. */
  sharedContent(content: CanvasDoc): void {
    this.sharedDoc = cleanDoc(content);
    this.sharedVersion++;
    this.emit(redraw(this.state.view, content));
  }

  /** The shared history changed (can undo / redo). */
  sharedChanged(): void {
    if (this.shared) this.emit(this.state.view);
  }

  /** Puts a spec on the canvas as one undoable step. */
  editSpec(spec: GraphSpec): void {
    if (this.shared) this.shared.replaceSpec(spec);
    else this.edit(() => specToDoc(spec));
  }

  /** Records `next` as one undo step (or folds it into the last one with the same key). */
  commit(next: CanvasDoc, coalesceKey: string | null = null, now: number = Date.now()): void {
    if (this.shared) {
      const drawn = this.sharedVersion;
      // The view shows `next` (its selection too) until the shared content comes back.
      this.state = { ...this.state, view: next };
      this.shared.commit(cleanDoc(next), coalesceKey);
      if (this.sharedVersion === drawn) this.emit(this.state.view);
      return;
    }
    const key = coalesceKey !== null && now - this.lastCommitAt <= EditorStore.COALESCE_MS ? coalesceKey : null;
    // A key that was not folded still labels this step, so the next keystroke can fold into it.
    this.history = historyPush(this.history, cleanDoc(next), key);
    if (key === null && coalesceKey !== null) this.history = { ...this.history, coalesceKey };
    this.lastCommitAt = now;
    this.emit(next);
  }

  /** Starts over from `doc` with an empty history (a graph was opened). */
  reset(doc: CanvasDoc): void {
    this.history = historyInit(cleanDoc(doc));
    this.emit(doc);
  }

  undo(): void {
    if (this.shared) return this.shared.undo();
    if (!this.state.canUndo) return;
    this.history = historyUndo(this.history);
    this.emit(this.history.present);
  }

  redo(): void {
    if (this.shared) return this.shared.redo();
    if (!this.state.canRedo) return;
    this.history = historyRedo(this.history);
    this.emit(this.history.present);
  }

  selectedIds(): Set<string> {
    return new Set(this.state.view.nodes.filter((n) => n.selected).map((n) => n.id));
  }

  /** React Flow's node changes: drags, selection and sizes are view-only until a drag ends. */
  onNodesChange = (changes: NodeChange<CanvasNode>[]): void => {
    const view = this.state.view;
    const nodes = applyNodeChanges(changes, view.nodes);
    const next = { ...view, nodes };
    const dragEnded = changes.some((c) => c.type === "position" && c.dragging === false);
    const structural = changes.some((c) => c.type === "remove" || c.type === "add" || c.type === "replace");
    if (dragEnded || structural) {
      // Whole pixels in the stored layout: drags give fractions nobody wants in a diff.
      const rounded = dragEnded
        ? { ...next, nodes: nodes.map((n) => ({ ...n, position: { x: Math.round(n.position.x), y: Math.round(n.position.y) } })) }
        : next;
      this.commit(rounded);
    } else {
      this.state = { ...this.state, view: next };
      if (this.shared) {
        const moved = changes.find((c) => c.type === "position" && c.dragging && c.position);
        if (moved && moved.type === "position") this.shared.dragging({ id: moved.id, x: Math.round(moved.position!.x), y: Math.round(moved.position!.y) });
      }
      for (const l of this.listeners) l();
    }
    if (dragEnded && this.shared) this.shared.dragging(null);
  };

  onEdgesChange = (changes: EdgeChange<CanvasEdge>[]): void => {
    const view = this.state.view;
    const next = { ...view, edges: applyEdgeChanges(changes, view.edges) };
    if (changes.some((c) => c.type === "remove" || c.type === "add" || c.type === "replace")) this.commit(next);
    else {
      this.state = { ...this.state, view: next };
      for (const l of this.listeners) l();
    }
  };

  /** Applies an edit to the current view and records it. */
  edit(change: (doc: CanvasDoc) => CanvasDoc, coalesceKey: string | null = null, now?: number): void {
    this.commit(change(this.state.view), coalesceKey, now);
  }

  select(ids: Set<string>): void {
    const view = this.state.view;
    const next = withSelection(
      { ...view, nodes: view.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), edges: view.edges.map((e) => (e.selected ? { ...e, selected: false } : e)) },
      ids,
    );
    this.state = { ...this.state, view: next };
    for (const l of this.listeners) l();
  }
}
