// The canvas page body: palette, React Flow canvas, inspector/revisions/code, status bar. What the
// user can do lives in actions/ (one module per concern, with its keys); this is the composition.
import { type Edge, useNodesInitialized, useReactFlow } from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import type { GraphSpec, OpSchema } from "../api/types";
import { useActionRunner, useKeyActions } from "./actions";
import { addOp } from "./actions/addOp";
import { openBlock, placeBlock, upgradeBlock } from "./actions/blockInstance";
import { makeBlock, openMakeBlock } from "./actions/makeBlock";
import { setInput, setParam } from "./actions/params";
import type { ActionContext, InsertAt, Making, Point, Refusal } from "./actions/types";
import { fitView } from "./actions/view";
import { MakeBlockDialog } from "./BlockDialog";
import type { LibraryBlock } from "./blockLibrary";
import { docBlocks, exposableParams, opsWithBlocks } from "./blocks";
import { CodePanel, storedCodeWidth } from "./CodePanel";
import { CheckContext, OpsContext, ReadOnlyContext } from "./context";
import { canonicalJson, docToSpec, modelPart } from "./convert";
import { EditorCanvas } from "./EditorCanvas";
import { EditorToolbar } from "./EditorToolbar";
import type { BlockMode, OpenBlock, SidePanel } from "./editorTypes";
import { minimapShown } from "./fit";
import { Inspector, type BlockActions, type InspectorActions } from "./Inspector";
import type { CanvasNode } from "./model";
import { Palette } from "./Palette";
import { RevisionsPanel } from "./RevisionsPanel";
import { StatusBar } from "./StatusBar";
import type { EditorStore } from "./store";
import { useServerCheck } from "./useCheck";

/** How long a refused wire's reason stays next to the pointer. */
const REFUSAL_MS = 4000;

function localStore(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

export interface EditorProps {
  graphId: number;
  store: EditorStore;
  ops: OpSchema[];
  categories?: string[];
  readOnly: boolean;
  saveState: string;
  dirty: boolean;
  savedRevision: number | null;
  revisionsKey: number;
  onSpecChange: (spec: GraphSpec) => void;
  onSave: () => void;
  onRestore: (n: number) => void;
  banner: React.ReactNode;
  /** The graph's team: blocks are made in and placed from its library. */
  team: number;
  library: LibraryBlock[] | null;
  libraryProblem: string | null;
  onLibraryChange: () => void;
  onOpenBlock: (open: OpenBlock) => void;
  blockMode?: BlockMode;
}

export function Editor(props: EditorProps) {
  const { store, ops, readOnly, graphId, blockMode, library, onSpecChange, onSave } = props;
  const state = useSyncExternalStore(store.subscribe, store.getState);
  const flow = useReactFlow<CanvasNode, Edge>();
  const catalog = useMemo(() => new Map(ops.map((o) => [o.name, o])), [ops]);
  // Block instances read like ops: the definitions the canvas carries join the catalog.
  const blockDefs = useMemo(() => docBlocks(state.view), [state.view.extra]); // eslint-disable-line react-hooks/exhaustive-deps
  const opsByName = useMemo(() => opsWithBlocks(catalog, blockDefs), [catalog, blockDefs]);
  const canvas = useRef<HTMLDivElement>(null);
  const pointer = useRef<Point | null>(null);
  const side = useRef<HTMLElement>(null);
  const [insertAt, setInsertAt] = useState<InsertAt | null>(null);
  const [panel, setPanel] = useState<SidePanel>("inspector");
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [showMinimap, setShowMinimap] = useState(() => minimapShown(localStore()));
  const [codeWidth, setCodeWidth] = useState<number | null>(() => storedCodeWidth(localStore(), window.innerWidth));
  const [making, setMaking] = useState<Making | null>(null);
  const [blockProblem, setBlockProblem] = useState<string | null>(null);

  // The spec follows committed content only, so a drag in progress neither re-checks nor re-saves.
  const spec = useMemo(() => docToSpec(state.committed), [state.committed]);
  const modelKey = useMemo(() => canonicalJson(modelPart(spec)), [spec]);
  const bindBody = blockMode?.checkSpec;
  const checkSpec = useMemo(() => (bindBody ? bindBody(spec) : spec), [bindBody, spec]);
  const check = useServerCheck(checkSpec, modelKey);
  useEffect(() => onSpecChange(spec), [spec, onSpecChange]);

  const ctx: ActionContext = {
    store,
    readOnly,
    ops: opsByName,
    flow,
    canvas: () => canvas.current,
    pointer: () => pointer.current,
    report: check.report,
    team: props.team,
    library,
    onSave,
    onOpenBlock: props.onOpenBlock,
    onLibraryChange: props.onLibraryChange,
    ui: { setPanel, setInsertAt, setRefusal, setMaking, setBlockProblem, setShowMinimap },
  };
  const run = useActionRunner(ctx);
  useKeyActions(run);

  const selected = useMemo(() => state.view.nodes.filter((n) => n.selected), [state.view.nodes]);
  const selectedOps = selected.filter((n) => n.type === "op").length;
  const inspectorActions: InspectorActions = useMemo(
    () => ({
      setParam: (nodeId, name, value, visit) => run(setParam, { nodeId, name, value, visit }),
      setInput: (nodeId, patch, visit) => run(setInput, { nodeId, patch, visit }),
    }),
    [run],
  );
  const blockActions: BlockActions = useMemo(
    () => ({
      library,
      problem: blockProblem,
      upgrade: (nodeId: string, version: number) => void run(upgradeBlock, { nodeId, version }),
      open: (nodeId: string) => run(openBlock, nodeId),
    }),
    [blockProblem, library, run],
  );
  const onMakeBlock = useCallback(() => run(openMakeBlock, undefined), [run]);

  useEffect(() => {
    if (!refusal) return;
    const timer = window.setTimeout(() => setRefusal(null), REFUSAL_MS);
    return () => window.clearTimeout(timer);
  }, [refusal]);

  // The first fit waits for React Flow to measure the nodes, so it knows where they end.
  const measured = useNodesInitialized();
  const fittedOnce = useRef(false);
  useEffect(() => {
    if (!measured || fittedOnce.current) return;
    fittedOnce.current = true;
    run(fitView, 0);
  }, [measured, run]);

  const codeResized = panel === "code" && codeWidth !== null;
  return (
    <OpsContext.Provider value={opsByName}>
      <CheckContext.Provider value={check}>
        <ReadOnlyContext.Provider value={readOnly}>
          <div className="editor" data-testid="editor">
            <EditorToolbar
              run={run}
              readOnly={readOnly}
              canUndo={state.canUndo && !readOnly}
              canRedo={state.canRedo && !readOnly}
              selectedOps={selectedOps}
              panel={panel}
              onPanel={setPanel}
              blockMode={blockMode}
              graphId={graphId}
              dirty={props.dirty}
              savedRevision={props.savedRevision}
              onSave={onSave}
              valid={check.report && !check.pending ? check.report.valid : null}
            />
            {props.banner}
            <div
              className={codeResized ? "editor-body side-resized" : "editor-body"}
              style={codeResized ? ({ "--side-width": `${codeWidth}px` } as React.CSSProperties) : undefined}
            >
              <Palette
                ops={ops}
                categories={props.categories}
                disabled={readOnly}
                onInsert={(op) => run(addOp, { op })}
                library={library}
                libraryProblem={props.libraryProblem}
                onPlaceBlock={(b) => void run(placeBlock, { id: b.id, version: b.latest_version, name: b.name })}
              />
              <EditorCanvas
                run={run}
                store={store}
                view={state.view}
                readOnly={readOnly}
                ops={ops}
                library={library}
                canvas={canvas}
                pointer={pointer}
                showMinimap={showMinimap}
                refusal={refusal}
                insertAt={insertAt}
                onInsertClose={() => setInsertAt(null)}
                codeOpen={panel === "code"}
                codeWidth={codeWidth}
                onCodeWidth={setCodeWidth}
                side={() => side.current}
              />
              <aside className="side" aria-label="Details" ref={side}>
                {panel === "inspector" && (
                  <Inspector selected={selected} ops={opsByName} readOnly={readOnly} actions={inspectorActions} blockActions={blockActions} onMakeBlock={onMakeBlock} />
                )}
                {panel === "revisions" && !blockMode && <RevisionsPanel graphId={graphId} refreshKey={props.revisionsKey} current={props.savedRevision} onRestore={props.onRestore} canEdit={!readOnly} />}
                {panel === "code" && <CodePanel spec={checkSpec} specKey={modelKey} />}
              </aside>
            </div>
            <StatusBar saveState={props.saveState} readOnly={readOnly} />
            {making && (
              <MakeBlockDialog
                rows={exposableParams(state.view, making.ids, opsByName)}
                selectedCount={making.ids.size}
                problem={making.problem}
                busy={making.busy}
                onConfirm={(req) => void run(makeBlock, { making, req })}
                onCancel={() => setMaking(null)}
              />
            )}
          </div>
        </ReadOnlyContext.Provider>
      </CheckContext.Provider>
    </OpsContext.Provider>
  );
}
