// What the page does with revisions: save the shared canvas as one, open another onto the shared
// canvas as the new base, put an old one's content on the shared canvas.
import { type Dispatch } from "react";
import { ApiError, api, apiRequest } from "../../api/client";
import type { Revision } from "../../api/types";
import { docToSpec, specToDoc } from "../convert";
import type { EditorStore } from "../store";
import type { RevisionAction, RevisionState } from "./revisionState";

export interface RevisionContext {
  graphId: number;
  store: EditorStore | null;
  readOnly: boolean;
  state: RevisionState;
  dirty: boolean;
  dispatch: Dispatch<RevisionAction>;
}

/**
 * Saves the shared canvas: the server derives the spec from the state it holds (everyone's edits
 * that reached it), checks it as any save, and keeps it as a new revision. Nobody's canvas resets.
 */
export async function saveRevision({ graphId, readOnly, state, dirty, dispatch }: RevisionContext): Promise<void> {
  const { current: spec, saving } = state;
  if (readOnly || !spec || !dirty || saving) return;
  dispatch({ type: "saveStarted" });
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
    dispatch({ type: "revisionLoaded", saved: { spec: docToSpec(specToDoc(rev.spec)), revision: n } });
  } catch (e) {
    dispatch({ type: "failed", message: (e as Error).message });
  }
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
