// What the page does with revisions: save one (or only the layout, when only positions moved),
// open another as the new base, put an old one's content on the canvas, drop the restored draft.
import { type Dispatch } from "react";
import { ApiError, api, apiRequest } from "../../api/client";
import type { GraphSpec, Revision } from "../../api/types";
import { EMPTY_SPEC, canonicalJson, docToSpec, modelPart, specToDoc } from "../convert";
import { clearDraft } from "../draft";
import { parseStaleBase, saveRevisionOnBase } from "../staleSave";
import type { EditorStore } from "../store";
import type { RevisionAction, RevisionState } from "./revisionState";

export interface RevisionContext {
  graphId: number;
  store: EditorStore | null;
  readOnly: boolean;
  /** The canvas is the graph's shared document: a save turns the server's shared state into a revision. */
  shared: boolean;
  state: RevisionState;
  dirty: boolean;
  dispatch: Dispatch<RevisionAction>;
}

/**
 * Saves the canvas on the revision it started from; a newer one makes the server refuse (409),
 * unless `force` (save as a new revision anyway).
 */
export async function saveRevision({ graphId, readOnly, shared, state, dirty, dispatch }: RevisionContext, force = false): Promise<void> {
  const { current: spec, saved, saving } = state;
  if (readOnly || !spec || !dirty || saving) return;
  dispatch({ type: "saveStarted" });
  if (shared) return saveShared(graphId, spec, dispatch);
  try {
    let revision = saved.revision;
    if (!force && saved.spec && revision !== null && canonicalJson(modelPart(spec)) === canonicalJson(modelPart(saved.spec))) {
      // Only positions moved: update the latest revision's layout instead of making a new one.
      await api.saveLayout(graphId, revision, spec.layout, spec.ui);
    } else {
      revision = (await saveRevisionOnBase(graphId, spec, saved.revision, force)).number;
    }
    clearDraft(graphId);
    dispatch({ type: "saved", saved: { spec, revision } });
  } catch (e) {
    const refused = parseStaleBase(e);
    if (refused) dispatch({ type: "saveRefused", stale: refused });
    else dispatch({ type: "saveFailed", message: e instanceof ApiError ? e.message : String(e) });
  }
}

/**
 * Saves the shared canvas: the server derives the spec from the state it holds (everyone's edits
 * that reached it), checks it as any save, and keeps it as a new revision. Nobody's canvas resets.
 */
async function saveShared(graphId: number, spec: GraphSpec, dispatch: Dispatch<RevisionAction>): Promise<void> {
  try {
    const rev = await apiRequest<Revision>("POST", `/api/graphs/${graphId}/collab/save/`, {});
    const saved = rev.spec ? docToSpec(specToDoc(rev.spec)) : spec;
    dispatch({ type: "saved", saved: { spec: saved, revision: rev.number } });
  } catch (e) {
    dispatch({ type: "saveFailed", message: e instanceof ApiError ? e.message : String(e) });
  }
}

/** Opens revision `n` as the new base (theirs): an undoable change of the canvas, nothing unsaved. */
export async function loadRevision({ graphId, store, dispatch }: RevisionContext, n: number): Promise<void> {
  if (!store) return;
  try {
    const rev = await api.revision(graphId, n);
    store.editSpec(rev.spec);
    clearDraft(graphId);
    dispatch({ type: "revisionLoaded", saved: { spec: docToSpec(specToDoc(rev.spec)), revision: n } });
  } catch (e) {
    dispatch({ type: "failed", message: (e as Error).message });
  }
}

/**
 * Puts the three-way merge of mine on top of theirs on the canvas, with their revision `n` as the new
 * base: the canvas is unsaved (mine on theirs) until the person saves, and Undo brings mine back.
 */
export function applyMerged({ graphId, store, dispatch }: RevisionContext, merged: GraphSpec, theirs: GraphSpec, n: number): void {
  if (!store) return;
  dispatch({ type: "revisionLoaded", saved: { spec: docToSpec(specToDoc(theirs)), revision: n } });
  store.editSpec(merged);
  clearDraft(graphId);
}

/** Puts revision `n`'s content on the canvas (an undoable change; the base stays). */
export async function restoreRevision({ graphId, store, dispatch }: RevisionContext, n: number): Promise<void> {
  if (!store) return;
  try {
    const rev = await api.revision(graphId, n);
    store.editSpec(rev.spec);
  } catch (e) {
    dispatch({ type: "failed", message: (e as Error).message });
  }
}

/** Drops the restored draft: the canvas goes back to what is saved. */
export function discardDraft({ graphId, store, state, dispatch }: RevisionContext): void {
  if (!store) return;
  clearDraft(graphId);
  dispatch({ type: "draftDiscarded" });
  store.reset(specToDoc(state.saved.spec ?? EMPTY_SPEC));
}
