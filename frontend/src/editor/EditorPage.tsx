// Loads a graph (latest revision, or the local draft of unsaved work), and saves revisions on the
// revision it started from: a stale base is refused (409) and answered by a dialog (load theirs /
// see the changes / save anyway); a light poll tells when a teammate saves; the diff view replaces
// the canvas while comparing two revisions.
import { ReactFlowProvider } from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { ApiError, api } from "../api/client";
import type { GraphSpec, GraphSummary, OpSchema } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { type BlockSpec, withBlockDefaults, type LibraryBlock, bindParams, blockToSpec, blocksApi, definitionOf, instancesOf, specToBlock, upgradeInstances } from "./blocks";
import { EMPTY_SPEC, canonicalJson, docToSpec, modelPart, normalizeSpec, specToDoc } from "./convert";
import { clearDraft, type Draft, loadDraft, storeDraft } from "./draft";
import { CompareContext, DiffPanel } from "./DiffPanel";
import { Editor } from "./Editor";
import type { BlockMode, OpenBlock } from "./editorTypes";
import { type LatestInfo, type StaleBase, newerThanOpen, parseStaleBase, saveRevisionOnBase, savedSentence } from "./staleSave";
import { EditorStore } from "./store";

const EMPTY_BASELINE = docToSpec(specToDoc(EMPTY_SPEC));

/** A block's body open for editing, on top of the graph (or of the body it was opened from). */
interface BlockEdit {
  open: OpenBlock;
  store: EditorStore;
  saving: boolean;
  problem: string | null;
}

/** A block version just saved: the canvas below offers to move its instances to it. */
interface UpgradeOffer {
  library: LibraryBlock;
  version: number;
}

function noSpecChange(): void {}
/** How often the open editor asks whether a teammate saved (only while the tab is visible). */
const POLL_MS = 5000;

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
  return {
    graph,
    ops: catalog.ops,
    categories: catalog.categories,
    saved,
    savedRevision,
    draft: loadDraft(graphId),
  };
}

export default function EditorPage({ graphId }: { graphId: number }) {
  const { canEdit } = useSession();
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [store, setStore] = useState<EditorStore | null>(null);
  // `spec` is the saved revision as the canvas writes it (layout filled in), so opening is not a change.
  const [saved, setSaved] = useState<{
    spec: GraphSpec | null;
    revision: number | null;
  }>({ spec: null, revision: null });
  const [current, setCurrent] = useState<GraphSpec | null>(null);
  const [restoredDraft, setRestoredDraft] = useState<Draft | null>(null);
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<string | null>(null);
  const [revisionsKey, setRevisionsKey] = useState(0);
  /** A save refused because a newer revision exists. */
  const [stale, setStale] = useState<StaleBase | null>(null);
  /** A newer revision a teammate saved while this one is open. */
  const [remote, setRemote] = useState<LatestInfo | null>(null);
  const [diff, setDiff] = useState<{ from: number; to: number } | null>(null);
  const [library, setLibrary] = useState<LibraryBlock[] | null>(null);
  const [libraryProblem, setLibraryProblem] = useState<string | null>(null);
  const [blockEdits, setBlockEdits] = useState<BlockEdit[]>([]);
  const [upgradeOffer, setUpgradeOffer] = useState<UpgradeOffer | null>(null);
  const openRevision = useRef<number | null>(null);
  openRevision.current = saved.revision;
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
        setSaved({
          spec: l.saved ? docToSpec(specToDoc(l.saved)) : null,
          revision: l.savedRevision,
        });
        setStore(new EditorStore(specToDoc(start)));
      })
      .catch((e) => live && setError(e instanceof ApiError && e.status === 404 ? "This graph does not exist or is not shared with your team." : (e as Error).message));
    return () => {
      live = false;
    };
  }, [graphId, readOnly]);

  const team = loaded?.graph.team ?? null;
  const refreshLibrary = useCallback(() => {
    if (team === null) return;
    blocksApi
      .list(team)
      .then((blocks) => {
        setLibrary(blocks.filter((b) => b.team === undefined || b.team === team));
        setLibraryProblem(null);
      })
      .catch((e) => setLibraryProblem(`Team blocks: ${(e as Error).message}`));
  }, [team]);
  useEffect(() => refreshLibrary(), [refreshLibrary]);

  const onOpenBlock = useCallback((open: OpenBlock) => {
    const body = blockToSpec(open.block, open.inputShapes, open.dependencies);
    setUpgradeOffer(null);
    setBlockEdits((edits) => [...edits, { open, store: new EditorStore(specToDoc(body as GraphSpec)), saving: false, problem: null }]);
  }, []);
  const topEdit = blockEdits.length ? blockEdits[blockEdits.length - 1] : null;
  const closeBlock = useCallback(() => {
    if (!topEdit) return;
    if (topEdit.store.getState().canUndo && !window.confirm(`Leave the body of ${topEdit.open.block.name}? Its changes are not saved as a version.`)) return;
    setBlockEdits((edits) => edits.filter((e) => e.store !== topEdit.store));
  }, [topEdit]);

  const saveBlockVersion = useCallback(async () => {
    if (!topEdit) return;
    const { block } = topEdit.open;
    const lib = library?.find((b) => b.name === block.name);
    if (!lib) return;
    // An edit is known by its store: patching it makes a new object.
    const patch = (p: Partial<BlockEdit>) => setBlockEdits((edits) => edits.map((e) => (e.store === topEdit.store ? { ...e, ...p } : e)));
    patch({ saving: true, problem: null });
    const definition: BlockSpec = specToBlock(withBlockDefaults(docToSpec(topEdit.store.getState().committed)), block);
    try {
      const saved = await blocksApi.saveVersion(lib.id, definition);
      setBlockEdits((edits) => edits.filter((e) => e.store !== topEdit.store));
      setUpgradeOffer({ library: lib, version: saved.number });
      refreshLibrary();
    } catch (e) {
      const err = e as ApiError;
      const fields = err.fields ? Object.entries(err.fields).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join("; ") : String(v)}`) : [];
      patch({ saving: false, problem: [err.message, ...fields].join(" · ") });
    }
  }, [library, refreshLibrary, topEdit]);

  const bodyCheck = useMemo(() => {
    if (!topEdit) return null;
    const { block, values } = topEdit.open;
    return (spec: GraphSpec) => bindParams(spec, block, values);
  }, [topEdit?.open]); // eslint-disable-line react-hooks/exhaustive-deps

  /** The store the upgrade offer applies to: the body below the one just saved, or the graph. */
  const offerStore = topEdit?.store ?? store;
  const acceptUpgrade = useCallback(async () => {
    if (!upgradeOffer || !offerStore) return;
    try {
      const v = await blocksApi.version(upgradeOffer.library.id, upgradeOffer.version);
      offerStore.edit((d) => upgradeInstances(d, definitionOf(v, upgradeOffer.library.name), v.dependencies ?? []));
      setUpgradeOffer(null);
    } catch (e) {
      setSaveError((e as Error).message);
    }
  }, [offerStore, upgradeOffer]);

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
    draftTimer.current = window.setTimeout(
      () =>
        storeDraft(graphId, {
          baseRevision: saved.revision,
          spec: current,
          savedAt: new Date().toISOString(),
        }),
      250,
    );
  }, [current, dirty, graphId, readOnly, saved.revision]);

  const save = useCallback(
    async (force = false) => {
      if (readOnly || !current || !dirty || saving) return;
      setSaving(true);
      setSaveError(null);
      setStale(null);
      const spec = current;
      try {
        let revision = saved.revision;
        if (!force && saved.spec && revision !== null && canonicalJson(modelPart(spec)) === canonicalJson(modelPart(saved.spec))) {
          // Only positions moved: update the latest revision's layout instead of making a new one.
          await api.saveLayout(graphId, revision, spec.layout, spec.ui);
        } else {
          // The base is the revision this canvas started from; a newer one makes the server refuse (409).
          revision = (await saveRevisionOnBase(graphId, spec, saved.revision, force)).number;
        }
        clearDraft(graphId);
        setRestoredDraft(null);
        setRemote(null);
        setSaved({ spec, revision });
        setRevisionsKey((k) => k + 1);
      } catch (e) {
        const refused = parseStaleBase(e);
        if (refused) {
          setStale(refused);
          setSaveError(`${savedSentence(refused.latest)}; yours is not saved yet`);
          setRevisionsKey((k) => k + 1);
        } else setSaveError(e instanceof ApiError ? e.message : String(e));
      } finally {
        setSaving(false);
      }
    },
    [current, dirty, graphId, readOnly, saved, saving],
  );

  /** Opens revision `n` as the new base (theirs): an undoable change of the canvas, nothing unsaved. */
  const loadRevision = useCallback(
    async (n: number) => {
      if (!store) return;
      try {
        const rev = await api.revision(graphId, n);
        store.edit(() => specToDoc(rev.spec));
        clearDraft(graphId);
        setRestoredDraft(null);
        setStale(null);
        setRemote(null);
        setSaveError(null);
        setDiff(null);
        setSaved({ spec: docToSpec(specToDoc(rev.spec)), revision: n });
        setRevisionsKey((k) => k + 1);
      } catch (e) {
        setSaveError((e as Error).message);
      }
    },
    [graphId, store],
  );

  // Live notice: ask every few seconds whether the latest revision moved past the open one
  // (never while the tab is hidden; at once when it shows again).
  useEffect(() => {
    if (!loaded) return;
    let live = true;
    let busy = false;
    const tick = async () => {
      if (busy || document.visibilityState === "hidden") return;
      busy = true;
      try {
        const graph = await api.graphHead(graphId);
        if (!live) return;
        const newer = newerThanOpen(graph as typeof graph & { latest?: unknown }, openRevision.current);
        setRemote((old) => {
          if (!newer) return null;
          if (old && old.number === newer.number) return old;
          setRevisionsKey((k) => k + 1);
          return newer;
        });
      } catch {
        // A failed poll says nothing; the next one tries again.
      } finally {
        busy = false;
      }
    };
    const timer = window.setInterval(tick, POLL_MS);
    const onVisible = () => {
      if (document.visibilityState === "visible") void tick();
    };
    document.addEventListener("visibilitychange", onVisible);
    return () => {
      live = false;
      window.clearInterval(timer);
      document.removeEventListener("visibilitychange", onVisible);
    };
  }, [graphId, loaded]);

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
  const onSave = useCallback(() => void save(), [save]);
  const openDiff = useCallback((from: number, to: number) => {
    setStale(null);
    setDiff({ from, to });
  }, []);
  const closeDiff = useCallback(() => setDiff(null), []);
  const restoreFromDiff = useCallback(
    (n: number) => {
      setDiff(null);
      void restore(n);
    },
    [restore],
  );

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

  const draftBanner = restoredDraft ? (
    <div className="banner" role="status" data-testid="draft-banner">
      Restored unsaved changes from {new Date(restoredDraft.savedAt).toLocaleString()}
      {restoredDraft.baseRevision !== saved.revision && ` (started from revision ${restoredDraft.baseRevision ?? "none"}; the latest is ${saved.revision ?? "none"})`}.
      <button type="button" data-testid="discard-draft" onClick={discardDraft}>
        Discard them
      </button>
    </div>
  ) : null;

  const remoteBanner =
    remote && !stale ? (
      <div className="banner remote-banner" role="status" data-testid="remote-banner">
        <span>{savedSentence(remote)}</span>
        <span className="muted">—</span>
        <button type="button" data-testid="remote-load" onClick={() => void loadRevision(remote.number)}>
          Load it
        </button>
        {saved.revision !== null && (
          <button type="button" data-testid="remote-diff" onClick={() => openDiff(saved.revision!, remote.number)}>
            See changes
          </button>
        )}
        {dirty && <span className="muted small">Loading it puts your unsaved changes aside (Undo brings them back).</span>}
      </div>
    ) : null;

  const offerCount = upgradeOffer && offerStore ? instancesOf(offerStore.getState().view, upgradeOffer.library.name).filter((n) => n.data.op !== `${upgradeOffer.library.name}@${upgradeOffer.version}`).length : 0;
  const upgradeBanner =
    upgradeOffer && offerCount > 0 ? (
      <div className="banner" role="status" data-testid="upgrade-offer">
        <span>
          {upgradeOffer.library.name} v{upgradeOffer.version} is saved in the team library.
        </span>
        <button type="button" data-testid="upgrade-offer-accept" onClick={() => void acceptUpgrade()}>
          Upgrade the {offerCount === 1 ? "instance" : `${offerCount} instances`} here to v{upgradeOffer.version}
        </button>
        <button type="button" data-testid="upgrade-offer-dismiss" onClick={() => setUpgradeOffer(null)}>
          Not now
        </button>
      </div>
    ) : null;

  const banner =
    draftBanner || remoteBanner || upgradeBanner ? (
      <>
        {remoteBanner}
        {draftBanner}
        {upgradeBanner}
      </>
    ) : null;

  const blockMode: BlockMode | undefined =
    topEdit && bodyCheck
      ? {
          title: `Block ${topEdit.open.block.name} v${topEdit.open.block.version} (opened from ${topEdit.open.instance})`,
          checkSpec: bodyCheck,
          canSave: !!library?.some((b) => b.name === topEdit.open.block.name),
          saving: topEdit.saving,
          problem: topEdit.problem,
          onSaveVersion: () => void saveBlockVersion(),
          onClose: closeBlock,
        }
      : undefined;
  const blockBanner = blockMode ? (
    <>
      <div className="banner" role="status" data-testid="block-mode-banner">
        Editing the body of {topEdit!.open.block.name} v{topEdit!.open.block.version}: its inputs are the graph inputs here, shaped as {topEdit!.open.instance} receives them.
        {!blockMode.canSave && " It is not in your team's library, so it cannot get a new version."}
      </div>
      {blockMode.problem && (
        <div className="banner error" role="alert" data-testid="block-save-error">
          {blockMode.problem}
        </div>
      )}
      {upgradeBanner}
    </>
  ) : null;

  const staleDialog = stale ? (
    <div className="stale-backdrop">
      <div className="stale-dialog" role="dialog" aria-modal="true" aria-labelledby="stale-title" data-testid="stale-dialog">
        <h2 id="stale-title">A newer revision was saved</h2>
        <p data-testid="stale-message">
          {savedSentence(stale.latest)}, after the revision {stale.base ?? saved.revision ?? "none"} you started from. Your changes are not saved yet.
        </p>
        <div className="stale-choices">
          <button type="button" data-testid="stale-load" onClick={() => void loadRevision(stale.latest.number)}>
            Load revision {stale.latest.number}
            <span className="muted small">discard mine, open theirs (Undo brings mine back)</span>
          </button>
          {(stale.base ?? saved.revision) !== null && (
            <button type="button" data-testid="stale-diff" onClick={() => openDiff((stale.base ?? saved.revision)!, stale.latest.number)}>
              See the changes
              <span className="muted small">
                revision {stale.base ?? saved.revision} → {stale.latest.number}
              </span>
            </button>
          )}
          <button type="button" data-testid="stale-force" onClick={() => void save(true)}>
            Save as a new revision anyway
            <span className="muted small">revision {stale.latest.number} stays in the history</span>
          </button>
        </div>
        <div className="dialog-actions">
          <button type="button" data-testid="stale-cancel" onClick={() => setStale(null)}>
            Keep editing
          </button>
        </div>
      </div>
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
      {diff ? (
        <DiffPanel graphId={graphId} from={diff.from} to={diff.to} onClose={closeDiff} onRestore={restoreFromDiff} />
      ) : (
        <CompareContext.Provider value={openDiff}>
          <ReactFlowProvider>
            {topEdit && blockMode ? (
              <Editor
                key={`block-${blockEdits.length}`}
                graphId={graphId}
                store={topEdit.store}
                ops={loaded.ops}
                categories={loaded.categories}
                readOnly={readOnly}
                saveState="Block body · “Save block version” adds it to the library"
                dirty={false}
                savedRevision={saved.revision}
                revisionsKey={revisionsKey}
                onSpecChange={noSpecChange}
                onSave={blockMode.onSaveVersion}
                onRestore={restore}
                banner={blockBanner}
                team={loaded.graph.team}
                library={library}
                libraryProblem={libraryProblem}
                onLibraryChange={refreshLibrary}
                onOpenBlock={onOpenBlock}
                blockMode={blockMode}
              />
            ) : (
              <Editor
                key="graph"
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
                onSave={onSave}
                onRestore={restore}
                banner={banner}
                team={loaded.graph.team}
                library={library}
                libraryProblem={libraryProblem}
                onLibraryChange={refreshLibrary}
                onOpenBlock={onOpenBlock}
              />
            )}
          </ReactFlowProvider>
        </CompareContext.Provider>
      )}
      {staleDialog}
    </div>
  );
}
