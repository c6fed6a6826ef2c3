// Loads a graph and joins its shared canvas (collab/: everyone on the graph edits one Y.Doc live,
// sees the others' avatars, pointers and selections; "Save revision" keeps the shared state as a
// revision); a light poll tells when a teammate saved; the diff view replaces the canvas while
// comparing two revisions. Each concern lives in page/ and collab/; this is the composition.
// Unsaved work lives in the shared document, so there is no local draft, and a save never meets a
// stale base (the REST API's 409 for a stale base is for API clients that post a spec).
import { ReactFlowProvider } from "@xyflow/react";
import { useCallback, useEffect, useMemo, useReducer, useRef, useState } from "react";
import { api } from "../api/client";
import type { GraphSpec } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { instancesOf } from "./blocks";
import { Avatars, ConnectionBadge } from "./collab/PresenceUi";
import { PresenceContext } from "./collab/presence";
import { useSharedGraph } from "./collab/useSharedGraph";
import { docToSpec, specToDoc } from "./convert";
import { CompareContext, DiffPanel } from "./DiffPanel";
import { Editor } from "./Editor";
import { BlockBanner, RemoteBanner, UpgradeBanner } from "./page/Banners";
import { useGraphLoad } from "./page/load";
import { type RevisionContext, loadRevision, restoreRevision, saveRevision } from "./page/revisionActions";
import { INITIAL_REVISIONS, isDirty, revisionReducer, saveStateText } from "./page/revisionState";
import { useBlockEdits, useBlockLibrary } from "./page/useBlockEdits";
import { useLatestPoll } from "./page/usePageWatch";
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
  const { canEdit, user } = useSession();
  const readOnly = !canEdit;
  const [rev, dispatch] = useReducer(revisionReducer, INITIAL_REVISIONS);
  const { loaded, store, error } = useGraphLoad(graphId, dispatch);
  // A viewer never writes, not even the starting content (the server would refuse it).
  const shared = useSharedGraph(graphId, store, user, loaded !== null && loaded.savedRevision === null && !readOnly);
  const { saved } = rev;
  const openRevision = useRef<number | null>(null);
  openRevision.current = saved.revision;
  const dirty = useMemo(() => isDirty(rev), [rev.current, rev.saved]); // eslint-disable-line react-hooks/exhaustive-deps
  useLatestPoll(graphId, loaded !== null, openRevision, dispatch);
  // A newer revision: while it holds what the shared canvas holds (someone pressed Save, or it
  // was loaded here), it is simply the saved state; a different one (an API client's save) is
  // offered in the banner.
  const remoteNumber = rev.remote?.number ?? null;
  const [remoteRev, setRemoteRev] = useState<{ number: number; spec: GraphSpec } | null>(null);
  useEffect(() => {
    if (remoteNumber === null) return;
    let live = true;
    api
      .revision(graphId, remoteNumber)
      .then((r) => live && setRemoteRev({ number: remoteNumber, spec: docToSpec(specToDoc(r.spec)) }))
      .catch(() => undefined);
    return () => {
      live = false;
    };
  }, [graphId, remoteNumber]);
  const remoteDiffers = remoteRev !== null && remoteRev.number === remoteNumber && isDirty({ current: rev.current, saved: { spec: remoteRev.spec, revision: remoteRev.number } });
  useEffect(() => {
    if (remoteRev && remoteRev.number === remoteNumber && !remoteDiffers) dispatch({ type: "saved", saved: { spec: remoteRev.spec, revision: remoteRev.number } });
  }, [remoteRev, remoteNumber, remoteDiffers]);

  const library = useBlockLibrary(loaded?.graph.team ?? null);
  const onBlockError = useCallback((message: string) => dispatch({ type: "failed", message }), []);
  const blocks = useBlockEdits(store, library.library, library.refresh, onBlockError);

  // Revision actions get the latest render's state; the handlers made of them stay the same.
  const ctx = useRef<RevisionContext>({ graphId, store, readOnly, state: rev, dirty, dispatch });
  ctx.current = { graphId, store, readOnly, state: rev, dirty, dispatch };
  const act = useMemo(
    () => ({
      save: () => void saveRevision(ctx.current),
      load: (n: number) => void loadRevision(ctx.current, n),
      restore: (n: number) => void restoreRevision(ctx.current, n),
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
  if (shared?.closed) return <Message text={shared.closed.message} className="error center" role="alert" />;
  if (!shared?.binding) return <Message text="Joining the shared canvas…" className="muted center" />;

  const { remote, diff } = rev;
  const { offer, top, blockMode } = blocks;
  const remoteBanner =
    remote && remoteDiffers ? (
      <RemoteBanner remote={remote} savedRevision={saved.revision} dirty={dirty} onLoad={() => act.load(remote.number)} onDiff={() => act.openDiff(saved.revision!, remote.number)} />
    ) : null;
  const offerCount = offer && blocks.offerStore ? instancesOf(blocks.offerStore.getState().view, offer.library.name).filter((n) => n.data.op !== `${offer.library.name}@${offer.version}`).length : 0;
  const upgradeBanner = offer && offerCount > 0 ? <UpgradeBanner offer={offer} count={offerCount} onAccept={() => void blocks.acceptOffer()} onDismiss={blocks.dismissOffer} /> : null;
  const weightsRun = importedRunOf(location.search);
  const sharedBanner =
    readOnly || shared.refused ? (
      <div className="banner viewer-banner" role="status" data-testid="viewer-banner">
        {readOnly
          ? "View only: you see the others' edits live, but your role in this team is viewer, so the canvas cannot be changed here."
          : `The server refused an edit (${shared.refused}).`}
      </div>
    ) : null;
  const banner =
    remoteBanner || upgradeBanner || weightsRun || sharedBanner ? (
      <>
        {sharedBanner}
        {weightsRun && <ImportedWeightsBanner runId={weightsRun} />}
        {remoteBanner}
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
        <Avatars me={shared.me} peers={shared.peers} />
        <ConnectionBadge status={shared.status} />
      </TopBar>
      {diff ? (
        <DiffPanel graphId={graphId} from={diff.from} to={diff.to} onClose={act.closeDiff} onRestore={act.restoreFromDiff} />
      ) : (
        <CompareContext.Provider value={act.openDiff}>
          <ReactFlowProvider>
            <PresenceContext.Provider value={top && blockMode ? null : shared.presence}>
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
            </PresenceContext.Provider>
          </ReactFlowProvider>
        </CompareContext.Provider>
      )}
    </div>
  );
}
