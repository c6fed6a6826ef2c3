// Delete (or Backspace) removes the selected nodes and wires, and every wire touching those nodes.
import { removeFromDoc } from "../clipboard";
import { type EditorAction, withMod } from "./types";

export const deleteSelection: EditorAction = {
  name: "deleteSelection",
  keyTest: (e) => !withMod(e) && (e.key === "Delete" || e.key === "Backspace"),
  preventDefault: true,
  perform: ({ store, readOnly }) => {
    if (readOnly) return;
    const view = store.getState().view;
    const nodeIds = new Set(view.nodes.filter((n) => n.selected).map((n) => n.id));
    const edgeIds = new Set(view.edges.filter((e) => e.selected).map((e) => e.id));
    if (nodeIds.size === 0 && edgeIds.size === 0) return;
    store.edit((d) => removeFromDoc(d, nodeIds, edgeIds));
  },
};
