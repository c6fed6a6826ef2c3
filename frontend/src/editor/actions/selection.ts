// Select every node (Ctrl-A), or none (Escape).
import { type EditorAction, withMod } from "./types";

export const selectAll: EditorAction = {
  name: "selectAll",
  keyTest: (e) => withMod(e) && e.key.toLowerCase() === "a",
  preventDefault: true,
  perform: ({ store }) => store.select(new Set(store.getState().view.nodes.map((n) => n.id))),
};

export const deselect: EditorAction = {
  name: "deselect",
  keyTest: (e) => e.key === "Escape",
  perform: ({ store }) => store.select(new Set()),
};
