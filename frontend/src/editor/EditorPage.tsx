// Loads a graph (latest revision, or the local draft of unsaved work), and saves revisions on the
// revision it started from: a stale base is refused (409) and answered by a dialog (load theirs /
// see the changes / save anyway); a light poll tells when a teammate saves; the diff view replaces
// the canvas while comparing two revisions. Each concern lives in page/; this is the composition.
import { ReactFlowProvider } from "@xyflow/react";
import { useCallback, useMemo, useReducer, useRef } from "react";
import type { GraphSpec } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { instancesOf } from "./blocks";
import { CompareContext, DiffPanel } from "./DiffPanel";
import { Editor } from "./Editor";
import { BlockBanner, DraftBanner, RemoteBanner, UpgradeBanner } from "./page/Banners";
import { useGraphLoad } from "./page/load";
import { type RevisionContext, applyMerged, discardDraft, loadRevision, restoreRevision, saveRevision } from "./page/revisionActions";
import { INITIAL_REVISIONS, isDirty, revisionReducer, saveStateText } from "./page/revisionState";
import { StaleDialog } from "./page/StaleDialog";
import { useBlockEdits, useBlockLibrary } from "./page/useBlockEdits";
import { useDraftKeeper, useLatestPoll } from "./page/usePageWatch";
import { ImportedWeightsBanner, importedRunOf } from "../graphs/AddWeights";

function noSpecChange(): void {}

/** The page before there is a graph to show: loading, or why it cannot open. */
function Message({ text, className, role }: { text: string; className: string; role?: "alert" }) {
  return (
    <div className="page">
      <TopBar />
      <p className={className} role={role}>
        {text}
      </p>
    </div>
  );
}

export default function EditorPage({ graphId }: { graphId: number }) {
  const { canEdit } = useSession();
  const readOnly = !canEdit;
  const [rev, dispatch] = useReducer(revisionReducer, INITIAL_REVISIONS);
  const { loaded, store, error } = useGraphLoad(graphId, readOnly, dispatch);
  const { saved } = rev;
  const openRevision = useRef<number | null>(null);
  openRevision.current = saved.revision;
  const dirty = useMemo(() => isDirty(rev), [rev.current, rev.saved]); // eslint-disable-line react-hooks/exhaustive-deps
  useDraftKeeper(graphId, readOnly, rev.current, dirty, saved.revision);
  useLatestPoll(graphId, loaded !== null, openRevision, dispatch);

  const library = useBlockLibrary(loaded?.graph.team ?? null);
  const onBlockError = useCallback((message: string) => dispatch({ type: "failed", message }), []);
  const blocks = useBlockEdits(store, library.library, library.refresh, onBlockError);

  // Revision actions get the latest render's state; the handlers made of them stay the same.
  const ctx = useRef<RevisionContext>({ graphId, store, readOnly, state: rev, dirty, dispatch });
  ctx.current = { graphId, store, readOnly, state: rev, dirty, dispatch };
  const act = useMemo(
    () => ({
      save: () => void saveRevision(ctx.current),
      saveAnyway: () => void saveRevision(ctx.current, true),
      load: (n: number) => void loadRevision(ctx.current, n),
      merge: (merged: GraphSpec, theirs: GraphSpec, n: number) => applyMerged(ctx.current, merged, theirs, n),
      restore: (n: number) => void restoreRevision(ctx.current, n),
      discardDraft: () => discardDraft(ctx.current),
      edited: (spec: GraphSpec) => dispatch({ type: "edited", spec }),
      openDiff: (from: number, to: number) => dispatch({ type: "diffOpened", from, to }),
      closeDiff: () => dispatch({ type: "diffClosed" }),
      restoreFromDiff: (n: number) => {
        dispatch({ type: "diffClosed" });
        void restoreRevision(ctx.current, n);
      },
    }),
    [],
  );

  if (error) return <Message text={error} className="error center" role="alert" />;
  if (!loaded || !store) return <Message text="Loading…" className="muted center" />;

  const { restoredDraft, remote, stale, diff } = rev;
  const { offer, top, blockMode } = blocks;
  const draftBanner = restoredDraft ? <DraftBanner draft={restoredDraft} savedRevision={saved.revision} onDiscard={act.discardDraft} /> : null;
  const remoteBanner =
    remote && !stale ? (
      <RemoteBanner remote={remote} savedRevision={saved.revision} dirty={dirty} onLoad={() => act.load(remote.number)} onDiff={() => act.openDiff(saved.revision!, remote.number)} />
    ) : null;
  const offerCount = offer && blocks.offerStore ? instancesOf(blocks.offerStore.getState().view, offer.library.name).filter((n) => n.data.op !== `${offer.library.name}@${offer.version}`).length : 0;
  const upgradeBanner = offer && offerCount > 0 ? <UpgradeBanner offer={offer} count={offerCount} onAccept={() => void blocks.acceptOffer()} onDismiss={blocks.dismissOffer} /> : null;
  const weightsRun = importedRunOf(location.search);
  const banner =
    draftBanner || remoteBanner || upgradeBanner || weightsRun ? (
      <>
        {weightsRun && <ImportedWeightsBanner runId={weightsRun} />}
        {remoteBanner}
        {draftBanner}
        {upgradeBanner}
      </>
    ) : null;

  const common = {
    graphId,
    ops: loaded.ops,
    categories: loaded.categories,
    readOnly,
    savedRevision: saved.revision,
    revisionsKey: rev.revisionsKey,
    onRestore: act.restore,
    team: loaded.graph.team,
    library: library.library,
    libraryProblem: library.problem,
    onLibraryChange: library.refresh,
    onOpenBlock: blocks.open,
  };

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
        <DiffPanel graphId={graphId} from={diff.from} to={diff.to} onClose={act.closeDiff} onRestore={act.restoreFromDiff} />
      ) : (
        <CompareContext.Provider value={act.openDiff}>
          <ReactFlowProvider>
            {top && blockMode ? (
              <Editor
                key={`block-${blocks.depth}`}
                {...common}
                store={top.store}
                saveState="Block body · “Save block version” adds it to the library"
                dirty={false}
                onSpecChange={noSpecChange}
                onSave={blockMode.onSaveVersion}
                banner={<BlockBanner edit={top} blockMode={blockMode} upgrade={upgradeBanner} />}
                blockMode={blockMode}
              />
            ) : (
              <Editor key="graph" {...common} store={store} saveState={saveStateText(rev, dirty)} dirty={dirty} onSpecChange={act.edited} onSave={act.save} banner={banner} />
            )}
          </ReactFlowProvider>
        </CompareContext.Provider>
      )}
      {stale && (
        <StaleDialog
          graphId={graphId}
          stale={stale}
          savedRevision={saved.revision}
          mine={rev.current}
          onLoad={() => act.load(stale.latest.number)}
          onDiff={act.openDiff}
          onForce={act.saveAnyway}
          onMerge={act.merge}
          onCancel={() => dispatch({ type: "staleDismissed" })}
        />
      )}
    </div>
  );
}
