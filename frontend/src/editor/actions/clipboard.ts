// Copy, cut and paste a selection. The clipboard is the page's own (shared by every canvas on it),
// not the system's: a fragment of canvas nodes and the wires between them.
import { type Fragment, copySelection, pasteFragment } from "../clipboard";
import { deleteSelection } from "./deleteSelection";
import { type EditorAction, withMod } from "./types";

let clipboard: Fragment | null = null;

/** How far a paste lands from what was copied (and each further paste from the one before). */
const PASTE_STEP = 40;

export const copy: EditorAction = {
  name: "copy",
  keyTest: (e) => withMod(e) && e.key.toLowerCase() === "c",
  perform: ({ store }) => {
    const ids = store.selectedIds();
    if (ids.size) clipboard = copySelection(store.getState().view, ids);
  },
};

export const cut: EditorAction = {
  name: "cut",
  keyTest: (e) => withMod(e) && e.key.toLowerCase() === "x",
  perform: (ctx) => {
    copy.perform(ctx);
    deleteSelection.perform(ctx);
  },
};

export const paste: EditorAction = {
  name: "paste",
  keyTest: (e) => withMod(e) && e.key.toLowerCase() === "v",
  preventDefault: true,
  perform: ({ store, readOnly }) => {
    if (readOnly || !clipboard) return;
    const fragment = clipboard;
    store.edit((d) => pasteFragment(d, fragment, { x: PASTE_STEP, y: PASTE_STEP }).doc);
    // Pasting again steps further, like most drawing tools.
    clipboard = { ...fragment, nodes: fragment.nodes.map((n) => ({ ...n, position: { x: n.position.x + PASTE_STEP, y: n.position.y + PASTE_STEP } })) };
  },
};
