// Where the open graph stands against the server: the revision it was opened on (or last saved),
// what the shared canvas holds now, a save under way or failed, a newer revision someone saved,
// and the two revisions being compared. Pure: every change is an action of the reducer.
import type { GraphSpec } from "../../api/types";
import { EMPTY_SPEC, docToSpec, normalizeSpec, specToDoc } from "../convert";
import type { LatestInfo } from "../newerRevision";

const EMPTY_BASELINE = docToSpec(specToDoc(EMPTY_SPEC));

export interface Saved {
  /** The saved revision as the canvas writes it (layout filled in), so opening is not a change. */
  spec: GraphSpec | null;
  revision: number | null;
}

export interface RevisionState {
  saved: Saved;
  /** The spec the canvas holds (null until it has said). */
  current: GraphSpec | null;
  saving: boolean;
  saveError: string | null;
  /** Bumped whenever the revision list may have changed, so the panel asks again. */
  revisionsKey: number;
  /** A newer revision a teammate saved while this one is open. */
  remote: LatestInfo | null;
  /** Two revisions compared in place of the canvas. */
  diff: { from: number; to: number } | null;
}

export const INITIAL_REVISIONS: RevisionState = {
  saved: { spec: null, revision: null },
  current: null,
  saving: false,
  saveError: null,
  revisionsKey: 0,
  remote: null,
  diff: null,
};

export type RevisionAction =
  | { type: "opened"; saved: Saved }
  | { type: "edited"; spec: GraphSpec }
  | { type: "saveStarted" }
  | { type: "saved"; saved: Saved }
  | { type: "saveFailed"; message: string }
  | { type: "failed"; message: string }
  | { type: "revisionLoaded"; saved: Saved }
  | { type: "latestSeen"; newer: LatestInfo | null }
  | { type: "diffOpened"; from: number; to: number }
  | { type: "diffClosed" };

export function revisionReducer(state: RevisionState, action: RevisionAction): RevisionState {
  switch (action.type) {
    case "opened":
      return { ...state, saved: action.saved };
    case "edited":
      return { ...state, current: action.spec };
    case "saveStarted":
      return { ...state, saving: true, saveError: null };
    case "saved":
      return { ...state, saving: false, remote: null, saved: action.saved, revisionsKey: state.revisionsKey + 1 };
    case "saveFailed":
      return { ...state, saving: false, saveError: action.message };
    case "failed":
      return { ...state, saveError: action.message };
    case "revisionLoaded":
      return { ...state, remote: null, saveError: null, diff: null, saved: action.saved, revisionsKey: state.revisionsKey + 1 };
    case "latestSeen":
      if (!action.newer) return state.remote ? { ...state, remote: null } : state;
      if (state.remote && state.remote.number === action.newer.number) return state;
      return { ...state, remote: action.newer, revisionsKey: state.revisionsKey + 1 };
    case "diffOpened":
      return { ...state, diff: { from: action.from, to: action.to } };
    case "diffClosed":
      return { ...state, diff: null };
  }
}

/** Whether the canvas holds work the server does not have. */
export function isDirty(state: Pick<RevisionState, "current" | "saved">): boolean {
  if (!state.current) return false;
  return normalizeSpec(byId(state.current)) !== normalizeSpec(byId(state.saved.spec ?? EMPTY_BASELINE));
}

/** The same content listed in id order: a shared canvas lists nodes in an order of its own. */
function byId(spec: GraphSpec): GraphSpec {
  const order = <T extends { id: string }>(list: T[] | undefined) => (list ? [...list].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) : list);
  return { ...spec, inputs: order(spec.inputs)!, nodes: order(spec.nodes) };
}

/** The status bar's words on saving. */
export function saveStateText(state: RevisionState, dirty: boolean): string {
  if (state.saving) return "Saving…";
  if (state.saveError) return `Save failed: ${state.saveError}`;
  if (dirty) return "Unsaved changes";
  return state.saved.revision ? `Saved · revision ${state.saved.revision}` : "Nothing saved yet";
}
