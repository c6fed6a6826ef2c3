// An editor action: a named thing the user can do on the canvas, what it does, and optionally the
// key that does it. Actions read and change the canvas through the context the editor hands them.
import type { Edge, ReactFlowInstance } from "@xyflow/react";
import type { OpSchema, ValidationReport } from "../../api/types";
import type { LibraryBlock } from "../blockLibrary";
import type { OpenBlock, SidePanel } from "../editorTypes";
import type { CanvasNode } from "../model";
import type { EditorStore } from "../store";

export interface Point {
  x: number;
  y: number;
}

/** The insert box: where it shows (in the canvas) and where the node it inserts goes (on the flow). */
export interface InsertAt {
  screen: Point;
  flow: Point;
}

/** A refused wire's reason, shown next to the pointer for a while. */
export interface Refusal {
  message: string;
  x: number;
  y: number;
  at: number;
}

/** "Make block" in progress: the selection it was asked for, and the dialog's state. */
export interface Making {
  ids: Set<string>;
  problem: string | null;
  busy: boolean;
}

/** The editor's own state that actions change (React state setters). */
export interface EditorUi {
  setPanel: (panel: SidePanel) => void;
  setInsertAt: (at: InsertAt | null) => void;
  setRefusal: (refusal: Refusal | null) => void;
  setMaking: (making: Making | null) => void;
  setBlockProblem: (problem: string | null) => void;
  setShowMinimap: (shown: (old: boolean) => boolean) => void;
}

/** Everything an action may read or change; the editor makes a fresh one on each render. */
export interface ActionContext {
  store: EditorStore;
  readOnly: boolean;
  /** The op catalog with the block definitions the canvas carries. */
  ops: Map<string, OpSchema>;
  flow: Pick<ReactFlowInstance<CanvasNode, Edge>, "screenToFlowPosition" | "fitView" | "getNodes" | "getNodesBounds">;
  /** The canvas element (null before it mounts). */
  canvas: () => HTMLDivElement | null;
  /** Where the pointer last moved over the canvas, in screen coordinates. */
  pointer: () => Point | null;
  /** The latest check of the canvas (wire checks run during a drag, outside React's render). */
  report: ValidationReport | null;
  /** The graph's team: blocks are made in and placed from its library. */
  team: number;
  library: LibraryBlock[] | null;
  onSave: () => void;
  onOpenBlock: (open: OpenBlock) => void;
  onLibraryChange: () => void;
  ui: EditorUi;
}

/** The keys of a key press that actions tell apart. */
export type KeyPress = Pick<KeyboardEvent, "key" | "ctrlKey" | "metaKey" | "shiftKey" | "altKey">;

export interface EditorAction<Arg = void, Result = void> {
  name: string;
  perform(ctx: ActionContext, arg: Arg): Result;
  /** Whether this key press does the action. */
  keyTest?: (e: KeyPress) => boolean;
  /** The key works in a text field too (the others leave typing alone). */
  whileTyping?: boolean;
  /** The browser's own meaning of the key (select the page, paste, go back) is kept off. */
  preventDefault?: boolean;
}

/** Ctrl, or Cmd on a Mac. */
export function withMod(e: KeyPress): boolean {
  return e.ctrlKey || e.metaKey;
}
