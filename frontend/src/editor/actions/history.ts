// Undo and redo: one step of the canvas's history each.
import { type EditorAction, withMod } from "./types";

export const undo: EditorAction = {
  name: "undo",
  keyTest: (e) => withMod(e) && e.key.toLowerCase() === "z" && !e.shiftKey,
  preventDefault: true,
  perform: ({ store }) => store.undo(),
};

export const redo: EditorAction = {
  name: "redo",
  keyTest: (e) => withMod(e) && ((e.key.toLowerCase() === "z" && e.shiftKey) || e.key.toLowerCase() === "y"),
  preventDefault: true,
  perform: ({ store }) => store.redo(),
};
