// The editor's state outside React: the canvas as the user sees it, and the undo history of its content.
import { type EdgeChange, type NodeChange, applyEdgeChanges, applyNodeChanges } from "@xyflow/react";
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

function withSelection(doc: CanvasDoc, selected: Set<string>): CanvasDoc {
  if (selected.size === 0) return doc;
  return { ...doc, nodes: doc.nodes.map((n) => (selected.has(n.id) ? { ...n, selected: true } : n)) };
}

export class EditorStore {
  private history: History<CanvasDoc>;
  private state: EditorState;
  private listeners = new Set<Listener>();
  private lastCommitAt = 0;

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
    this.state = {
      view,
      committed: this.history.present,
      canUndo: this.history.past.length > 0,
      canRedo: this.history.future.length > 0,
    };
    for (const l of this.listeners) l();
  }

  /** Records `next` as one undo step (or folds it into the last one with the same key). */
  commit(next: CanvasDoc, coalesceKey: string | null = null, now: number = Date.now()): void {
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
    if (!this.state.canUndo) return;
    this.history = historyUndo(this.history);
    this.emit(this.history.present);
  }

  redo(): void {
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
      for (const l of this.listeners) l();
    }
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
