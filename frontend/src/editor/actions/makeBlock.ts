// "Make block": the selected op nodes become a block in the team's library and one instance of it
// on the canvas, in one undo step (the block stays in the library).
import { blocksApi } from "../blockLibrary";
import { BlockError, type MakeBlockRequest, makeBlock as collapse } from "../blocks";
import { messageOf } from "./shared";
import type { EditorAction, Making } from "./types";

/** Opens the dialog for the selected op nodes (nothing when none is selected). */
export const openMakeBlock: EditorAction = {
  name: "openMakeBlock",
  perform: ({ store, readOnly, ui }) => {
    if (readOnly) return;
    const ids = new Set(store.getState().view.nodes.filter((n) => n.selected && n.type === "op").map((n) => n.id));
    if (ids.size) ui.setMaking({ ids, problem: null, busy: false });
  },
};

/** The dialog's answer: the block is checked, saved to the library, then put on the canvas. */
export const makeBlock: EditorAction<{ making: Making; req: MakeBlockRequest }, Promise<void>> = {
  name: "makeBlock",
  perform: async ({ store, ops, team, ui, onLibraryChange }, { making, req }) => {
    let made;
    try {
      made = collapse(store.getState().view, making.ids, req, ops);
    } catch (e) {
      ui.setMaking({ ...making, problem: (e as Error).message });
      return;
    }
    ui.setMaking({ ...making, problem: null, busy: true });
    try {
      await blocksApi.create(team, req.name, req.description ?? "", made.block);
    } catch (e) {
      ui.setMaking({ ...making, problem: messageOf(e), busy: false });
      return;
    }
    try {
      store.edit((d) => collapse(d, making.ids, req, ops).doc);
    } catch (e) {
      ui.setBlockProblem(e instanceof BlockError ? e.message : String(e));
    }
    ui.setMaking(null);
    ui.setPanel("inspector");
    onLibraryChange();
  },
};
