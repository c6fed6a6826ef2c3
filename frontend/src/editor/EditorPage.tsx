// Loads a graph (latest revision, or the local draft of unsaved work), and saves revisions.
import { ReactFlowProvider } from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { ApiError, api } from "../api/client";
import type { GraphSpec, GraphSummary, OpSchema } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { EMPTY_SPEC, canonicalJson, docToSpec, modelPart, normalizeSpec, specToDoc } from "./convert";
import { clearDraft, type Draft, loadDraft, storeDraft } from "./draft";
import { Editor } from "./Editor";
import { EditorStore } from "./store";

const EMPTY_BASELINE = docToSpec(specToDoc(EMPTY_SPEC));

interface Loaded {
  graph: GraphSummary;
  ops: OpSchema[];
  categories?: string[];
  /** What the server has: the latest revision's spec, or null when nothing was saved yet. */
  saved: GraphSpec | null;
  savedRevision: number | null;
  draft: Draft | null;
}

async function loadAll(graphId: number): Promise<Loaded> {
  const [graph, catalog] = await Promise.all([api.graph(graphId), api.ops()]);
  const savedRevision = graph.latest_revision || null;
  const saved = savedRevision ? (await api.revision(graphId, savedRevision)).spec : null;
  return { graph, ops: catalog.ops, categories: catalog.categories, saved, savedRevision, draft: loadDraft(graphId) };
}

export default function EditorPage({ graphId }: { graphId: number }) {
  const { canEdit } = useSession();
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [store, setStore] = useState<EditorStore | null>(null);
  // `spec` is the saved revision as the canvas writes it (layout filled in), so opening is not a change.
  const [saved, setSaved] = useState<{ spec: GraphSpec | null; revision: number | null }>({ spec: null, revision: null });
  const [current, setCurrent] = useState<GraphSpec | null>(null);
  const [restoredDraft, setRestoredDraft] = useState<Draft | null>(null);
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<string | null>(null);
  const [revisionsKey, setRevisionsKey] = useState(0);
  const readOnly = !canEdit;

  useEffect(() => {
    let live = true;
    loadAll(graphId)
      .then((l) => {
        if (!live) return;
        const base = l.saved ?? EMPTY_SPEC;
        let start = base;
        const draft = l.draft;
        if (!readOnly && draft && normalizeSpec(draft.spec) !== normalizeSpec(base)) {
          start = draft.spec;
          setRestoredDraft(draft);
        }
        setLoaded(l);
        setSaved({ spec: l.saved ? docToSpec(specToDoc(l.saved)) : null, revision: l.savedRevision });
        setStore(new EditorStore(specToDoc(start)));
      })
      .catch((e) => live && setError(e instanceof ApiError && e.status === 404 ? "This graph does not exist or is not shared with your team." : (e as Error).message));
    return () => {
      live = false;
    };
  }, [graphId, readOnly]);

  const dirty = useMemo(() => {
    if (!current) return false;
    return normalizeSpec(current) !== normalizeSpec(saved.spec ?? EMPTY_BASELINE);
  }, [current, saved]);

  // Keep a draft of unsaved work; drop it once the canvas matches what is saved.
  const draftTimer = useRef<number | undefined>(undefined);
  useEffect(() => {
    if (readOnly || !current) return;
    window.clearTimeout(draftTimer.current);
    if (!dirty) {
      clearDraft(graphId);
      return;
    }
    draftTimer.current = window.setTimeout(() => storeDraft(graphId, { baseRevision: saved.revision, spec: current, savedAt: new Date().toISOString() }), 250);
  }, [current, dirty, graphId, readOnly, saved.revision]);

  const save = useCallback(async () => {
    if (readOnly || !current || !dirty || saving) return;
    setSaving(true);
    setSaveError(null);
    const spec = current;
    try {
      let revision = saved.revision;
      if (saved.spec && revision !== null && canonicalJson(modelPart(spec)) === canonicalJson(modelPart(saved.spec))) {
        // Only positions moved: update the latest revision's layout instead of making a new one.
        await api.saveLayout(graphId, revision, spec.layout, spec.ui);
      } else {
        revision = (await api.saveRevision(graphId, spec)).number;
      }
      clearDraft(graphId);
      setRestoredDraft(null);
      setSaved({ spec, revision });
      setRevisionsKey((k) => k + 1);
    } catch (e) {
      setSaveError(e instanceof ApiError ? e.message : String(e));
    } finally {
      setSaving(false);
    }
  }, [current, dirty, graphId, readOnly, saved, saving]);

  const restore = useCallback(
    async (n: number) => {
      if (!store) return;
      try {
        const rev = await api.revision(graphId, n);
        store.edit(() => specToDoc(rev.spec));
      } catch (e) {
        setSaveError((e as Error).message);
      }
    },
    [graphId, store],
  );

  const discardDraft = useCallback(() => {
    if (!store) return;
    clearDraft(graphId);
    setRestoredDraft(null);
    store.reset(specToDoc(saved.spec ?? EMPTY_SPEC));
  }, [graphId, saved.spec, store]);

  const onSpecChange = useCallback((spec: GraphSpec) => setCurrent(spec), []);

  if (error)
    return (
      <div className="page">
        <TopBar />
        <p className="error center" role="alert">
          {error}
        </p>
      </div>
    );
  if (!loaded || !store)
    return (
      <div className="page">
        <TopBar />
        <p className="muted center">Loading…</p>
      </div>
    );

  const saveState = saving
    ? "Saving…"
    : saveError
      ? `Save failed: ${saveError}`
      : dirty
        ? "Unsaved changes"
        : saved.revision
          ? `Saved · revision ${saved.revision}`
          : "Nothing saved yet";

  const banner = restoredDraft ? (
    <div className="banner" role="status" data-testid="draft-banner">
      Restored unsaved changes from {new Date(restoredDraft.savedAt).toLocaleString()}
      {restoredDraft.baseRevision !== saved.revision && ` (started from revision ${restoredDraft.baseRevision ?? "none"}; the latest is ${saved.revision ?? "none"})`}.
      <button type="button" data-testid="discard-draft" onClick={discardDraft}>
        Discard them
      </button>
    </div>
  ) : null;

  return (
    <div className="page editor-page">
      <TopBar>
        <span className="graph-name" data-testid="graph-name">
          {loaded.graph.name}
        </span>
        {dirty && (
          <span className="dirty-dot" data-testid="unsaved-flag" title="Unsaved changes" aria-label="Unsaved changes">
            ●
          </span>
        )}
      </TopBar>
      <ReactFlowProvider>
        <Editor
          graphId={graphId}
          store={store}
          ops={loaded.ops}
          categories={loaded.categories}
          readOnly={readOnly}
          saveState={saveState}
          dirty={dirty}
          savedRevision={saved.revision}
          revisionsKey={revisionsKey}
          onSpecChange={onSpecChange}
          onSave={save}
          onRestore={restore}
          banner={banner}
        />
      </ReactFlowProvider>
    </div>
  );
}
