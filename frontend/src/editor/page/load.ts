// Opening a graph: its summary, the op catalog, the latest revision, and (only where the canvas is
// not shared) the local draft of unsaved work, which the canvas starts on when it differs from what
// is saved. A shared canvas keeps unsaved work in the graph's shared document instead.
import { useEffect, useState, type Dispatch } from "react";
import { ApiError, api } from "../../api/client";
import type { GraphSpec, GraphSummary, OpSchema } from "../../api/types";
import { EMPTY_SPEC, docToSpec, normalizeSpec, specToDoc } from "../convert";
import { type Draft, loadDraft } from "../draft";
import { EditorStore } from "../store";
import type { RevisionAction } from "./revisionState";

export interface Loaded {
  graph: GraphSummary;
  ops: OpSchema[];
  categories?: string[];
  /** What the server has: the latest revision's spec, or null when nothing was saved yet. */
  saved: GraphSpec | null;
  savedRevision: number | null;
  draft: Draft | null;
}

async function loadAll(graphId: number, shared: boolean): Promise<Loaded> {
  const [graph, catalog] = await Promise.all([api.graph(graphId), api.ops()]);
  const savedRevision = graph.latest_revision || null;
  const saved = savedRevision ? (await api.revision(graphId, savedRevision)).spec : null;
  return {
    graph,
    ops: catalog.ops,
    categories: catalog.categories,
    saved,
    savedRevision,
    draft: shared ? null : loadDraft(graphId),
  };
}

/** The graph as opened, and the store of its canvas; null while loading. */
export function useGraphLoad(
  graphId: number,
  readOnly: boolean,
  dispatch: Dispatch<RevisionAction>,
  shared = false,
): { loaded: Loaded | null; store: EditorStore | null; error: string | null } {
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [store, setStore] = useState<EditorStore | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    loadAll(graphId, shared)
      .then((l) => {
        if (!live) return;
        const base = l.saved ?? EMPTY_SPEC;
        const draft = !readOnly && l.draft && normalizeSpec(l.draft.spec) !== normalizeSpec(base) ? l.draft : null;
        setLoaded(l);
        dispatch({ type: "opened", saved: { spec: l.saved ? docToSpec(specToDoc(l.saved)) : null, revision: l.savedRevision }, restoredDraft: draft });
        setStore(new EditorStore(specToDoc(draft ? draft.spec : base)));
      })
      .catch((e) => live && setError(e instanceof ApiError && e.status === 404 ? "This graph does not exist or is not shared with your team." : (e as Error).message));
    return () => {
      live = false;
    };
  }, [graphId, readOnly, dispatch, shared]);
  return { loaded, store, error };
}
