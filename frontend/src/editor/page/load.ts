// Opening a graph: its summary, the op catalog and the latest revision. Unsaved work lives in the
// graph's shared document (collab/), which the canvas follows once the room has synced.
import { useEffect, useState, type Dispatch } from "react";
import { ApiError, api } from "../../api/client";
import type { GraphSpec, GraphSummary, OpSchema } from "../../api/types";
import { EMPTY_SPEC, docToSpec, specToDoc } from "../convert";
import { EditorStore } from "../store";
import type { RevisionAction } from "./revisionState";

export interface Loaded {
  graph: GraphSummary;
  ops: OpSchema[];
  categories?: string[];
  /** What the server has: the latest revision's spec, or null when nothing was saved yet. */
  saved: GraphSpec | null;
  savedRevision: number | null;
}

async function loadAll(graphId: number): Promise<Loaded> {
  const [graph, catalog] = await Promise.all([api.graph(graphId), api.ops()]);
  const savedRevision = graph.latest_revision || null;
  const saved = savedRevision ? (await api.revision(graphId, savedRevision)).spec : null;
  return {
    graph,
    ops: catalog.ops,
    categories: catalog.categories,
    saved,
    savedRevision,
  };
}

/** The graph as opened, and the store of its canvas; null while loading. */
export function useGraphLoad(
  graphId: number,
  dispatch: Dispatch<RevisionAction>,
): { loaded: Loaded | null; store: EditorStore | null; error: string | null } {
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [store, setStore] = useState<EditorStore | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    loadAll(graphId)
      .then((l) => {
        if (!live) return;
        setLoaded(l);
        dispatch({ type: "opened", saved: { spec: l.saved ? docToSpec(specToDoc(l.saved)) : null, revision: l.savedRevision } });
        setStore(new EditorStore(specToDoc(l.saved ?? EMPTY_SPEC)));
      })
      .catch((e) => live && setError(e instanceof ApiError && e.status === 404 ? "This graph does not exist or is not shared with your team." : (e as Error).message));
    return () => {
      live = false;
    };
  }, [graphId, dispatch]);
  return { loaded, store, error };
}
