// The editor's actions, and the keys that do them. A key press does the first action whose key
// test it passes; outside a text field only, unless the action says otherwise (Ctrl-S).
import { useEffect, useRef } from "react";
import { copy, cut, paste } from "./clipboard";
import { deleteSelection } from "./deleteSelection";
import { redo, undo } from "./history";
import { openInsert } from "./insert";
import { autoLayout } from "./layout";
import { save } from "./save";
import { deselect, selectAll } from "./selection";
import type { ActionContext, EditorAction, KeyPress } from "./types";
import { fitView } from "./view";

export const KEY_ACTIONS: EditorAction<void, unknown>[] = [save, undo, redo, copy, cut, paste, selectAll, deleteSelection, openInsert, fitView, autoLayout, deselect];

/** The action a key press does, if any. */
export function actionForKey(e: KeyPress, actions: EditorAction<void, unknown>[] = KEY_ACTIONS): EditorAction<void, unknown> | undefined {
  return actions.find((a) => a.keyTest?.(e));
}

/** Whether a key press goes to a text field (or a select) rather than the canvas. */
export function isTyping(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
}

/** Does an action with the context of the latest render. */
export type RunAction = <Arg, Result>(action: EditorAction<Arg, Result>, arg: Arg) => Result;

/** A runner that stays the same from render to render and hands each action the latest context. */
export function useActionRunner(ctx: ActionContext): RunAction {
  const latest = useRef(ctx);
  latest.current = ctx;
  const runner = useRef<RunAction>((action, arg) => action.perform(latest.current, arg));
  return runner.current;
}

/** Listens for the editor's keys on the window while the editor is shown. */
export function useKeyActions(run: RunAction): void {
  useEffect(() => {
    function onKey(e: KeyboardEvent) {
      const action = actionForKey(e);
      if (!action || (!action.whileTyping && isTyping(e.target))) return;
      if (action.preventDefault) e.preventDefault();
      run(action, undefined);
    }
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [run]);
}
