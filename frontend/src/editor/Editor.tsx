// The canvas page body: palette, React Flow canvas, inspector/revisions/code, status bar.
import {
  Background,
  type Connection,
  ControlButton,
  Controls,
  type Edge,
  type FinalConnectionState,
  type FitViewOptions,
  MiniMap,
  Panel,
  ReactFlow,
  useNodesInitialized,
  useReactFlow,
} from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import { ApiError } from "../api/client";
import type { GraphSpec, OpSchema } from "../api/types";
import { MakeBlockDialog } from "./BlockDialog";
import {
  BlockError,
  type BlockSpec,
  type LibraryBlock,
  type MakeBlockRequest,
  blocksApi,
  blocksByRef,
  definitionOf,
  docBlocks,
  exposableParams,
  makeBlock,
  opsWithBlocks,
  parseBlockRef,
  placeInstance,
  upgradeInstances,
  usedBlocks,
} from "./blocks";
import { CodePanel, CodeWidthHandle, storedCodeWidth } from "./CodePanel";
import { copySelection, type Fragment, pasteFragment, removeFromDoc } from "./clipboard";
import { connectInDoc, connectionProblem } from "./connect";
import { FIT_MAX_ZOOM, MINIMAP_KEY, fitPadding, minimapShown } from "./fit";
import { CheckContext, OpsContext, ReadOnlyContext } from "./context";
import { canonicalJson, docToSpec, modelPart, specToDoc } from "./convert";
import { idBase, nextId } from "./ids";
import { InsertBox } from "./InsertBox";
import { Inspector, type InspectorActions } from "./Inspector";
import { layoutPositions } from "./layout";
import { type CanvasNode, NODE_HEIGHT, NODE_WIDTH, handleIndex } from "./model";
import { nodeTypes } from "./nodes";
import { BLOCK_MIME, OP_MIME, Palette } from "./Palette";
import { edgeTypes } from "./ShapeEdge";
import { StatusBar } from "./StatusBar";
import type { EditorStore } from "./store";
import { TEMPLATES } from "./templates";
import { RevisionsPanel } from "./RevisionsPanel";
import { useServerCheck } from "./useCheck";
import { UNSET } from "./paramForm";
import { TrainButton } from "../runs/train/TrainButton";

let clipboard: Fragment | null = null;

/** How long a refused wire's reason stays next to the pointer. */
const REFUSAL_MS = 4000;

function localStore(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

type SidePanel = "inspector" | "revisions" | "code";

/** What "Open block" hands the page: the definition an instance pins, and what its body needs to be checked. */
export interface OpenBlock {
  instance: string;
  block: BlockSpec;
  dependencies: BlockSpec[];
  /** The shape each block input receives at this instance (null: not known yet). */
  inputShapes: (number[] | null)[];
  /** The instance's param values, so the body is checked as this instance builds it. */
  values: Record<string, unknown>;
}

/** The editor showing a block's body instead of a graph. */
export interface BlockMode {
  title: string;
  /** The body spec as the validator sees it (block params bound to the instance's values). */
  checkSpec: (spec: GraphSpec) => GraphSpec;
  canSave: boolean;
  saving: boolean;
  problem: string | null;
  onSaveVersion: () => void;
  onClose: () => void;
}

function messageOf(e: unknown): string {
  if (e instanceof ApiError && e.fields) {
    const parts = Object.entries(e.fields).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join("; ") : String(v)}`);
    if (parts.length) return `${e.message} (${parts.join(" · ")})`;
  }
  return (e as Error).message;
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

function isTyping(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
}

export function Editor(props: EditorProps) {
  const { store, ops, readOnly, graphId, blockMode, team, library, onLibraryChange, onOpenBlock } = props;
  const state = useSyncExternalStore(store.subscribe, store.getState);
  const flow = useReactFlow();
  const catalog = useMemo(() => new Map(ops.map((o) => [o.name, o])), [ops]);
  // Block instances read like ops: the definitions the canvas carries join the catalog.
  const blockDefs = useMemo(() => docBlocks(state.view), [state.view.extra]); // eslint-disable-line react-hooks/exhaustive-deps
  const opsByName = useMemo(() => opsWithBlocks(catalog, blockDefs), [catalog, blockDefs]);
  const wrapper = useRef<HTMLDivElement>(null);
  const pointer = useRef<{ x: number; y: number } | null>(null);
  const [insertAt, setInsertAt] = useState<{ screen: { x: number; y: number }; flow: { x: number; y: number } } | null>(null);
  const [panel, setPanel] = useState<SidePanel>("inspector");

  // The spec follows committed content only, so a drag in progress neither re-checks nor re-saves.
  const spec = useMemo(() => docToSpec(state.committed), [state.committed]);
  const modelKey = useMemo(() => canonicalJson(modelPart(spec)), [spec]);
  const bindBody = blockMode?.checkSpec;
  const checkSpec = useMemo(() => (bindBody ? bindBody(spec) : spec), [bindBody, spec]);
  const check = useServerCheck(checkSpec, modelKey);
  // Wire checks run during a drag, outside React's render: they read the latest report from here.
  const reportRef = useRef(check.report);
  reportRef.current = check.report;
  const [refusal, setRefusal] = useState<{ message: string; x: number; y: number; at: number } | null>(null);
  const [showMinimap, setShowMinimap] = useState(() => minimapShown(localStore()));
  const [codeWidth, setCodeWidth] = useState<number | null>(() => storedCodeWidth(localStore(), window.innerWidth));
  const side = useRef<HTMLElement>(null);
  const { onSpecChange } = props;
  useEffect(() => onSpecChange(spec), [spec, onSpecChange]);

  const selected = useMemo(() => state.view.nodes.filter((n) => n.selected), [state.view.nodes]);
  const selectedOps = selected.filter((n) => n.type === "op").length;

  // ---- Blocks: make one of the selection, place one from the library, upgrade, open ----
  const [making, setMaking] = useState<{ ids: Set<string>; problem: string | null; busy: boolean } | null>(null);
  const [blockProblem, setBlockProblem] = useState<string | null>(null);

  const openMakeBlock = useCallback(() => {
    if (readOnly) return;
    const ids = new Set(store.getState().view.nodes.filter((n) => n.selected && n.type === "op").map((n) => n.id));
    if (ids.size) setMaking({ ids, problem: null, busy: false });
  }, [readOnly, store]);

  const confirmMakeBlock = useCallback(
    async (req: MakeBlockRequest) => {
      if (!making) return;
      let made;
      try {
        made = makeBlock(store.getState().view, making.ids, req, opsByName);
      } catch (e) {
        setMaking({ ...making, problem: (e as Error).message });
        return;
      }
      setMaking({ ...making, problem: null, busy: true });
      try {
        await blocksApi.create(team, req.name, req.description ?? "", made.block);
      } catch (e) {
        setMaking({ ...making, problem: messageOf(e), busy: false });
        return;
      }
      try {
        // One undo step brings the selection back (the block stays in the library).
        store.edit((d) => makeBlock(d, making.ids, req, opsByName).doc);
      } catch (e) {
        setBlockProblem(e instanceof BlockError ? e.message : String(e));
      }
      setMaking(null);
      setPanel("inspector");
      onLibraryChange();
    },
    [making, onLibraryChange, opsByName, store, team],
  );

  const placeBlock = useCallback(
    async (lib: { id: number; version: number; name: string }, at?: { x: number; y: number }) => {
      if (readOnly) return;
      let position = at;
      if (!position) {
        const box = wrapper.current?.getBoundingClientRect();
        const center = box ? { x: box.left + box.width / 2, y: box.top + box.height / 2 } : { x: 400, y: 300 };
        position = flow.screenToFlowPosition(center);
      }
      const corner = { x: position.x - NODE_WIDTH / 2, y: position.y - NODE_HEIGHT / 2 };
      try {
        const v = await blocksApi.version(lib.id, lib.version);
        store.edit((d) => placeInstance(d, definitionOf(v, lib.name), v.dependencies ?? [], corner).doc);
        setBlockProblem(null);
        setPanel("inspector");
      } catch (e) {
        setBlockProblem(`Could not place ${lib.name} v${lib.version}: ${messageOf(e)}`);
      }
    },
    [flow, readOnly, store],
  );

  const blockActions = useMemo(
    () => ({
      library,
      problem: blockProblem,
      upgrade: async (nodeId: string, version: number) => {
        const node = store.getState().view.nodes.find((n) => n.id === nodeId);
        const ref = node?.type === "op" ? parseBlockRef(node.data.op) : null;
        const lib = ref ? library?.find((b) => b.name === ref.name) : undefined;
        if (!ref || !lib) return;
        try {
          const v = await blocksApi.version(lib.id, version);
          store.edit((d) => upgradeInstances(d, definitionOf(v, lib.name), v.dependencies ?? [], [nodeId]));
          setBlockProblem(null);
        } catch (e) {
          setBlockProblem(`Could not upgrade ${nodeId}: ${messageOf(e)}`);
        }
      },
      open: (nodeId: string) => {
        const view = store.getState().view;
        const node = view.nodes.find((n) => n.id === nodeId);
        if (node?.type !== "op") return;
        const all = docBlocks(view);
        const block = blocksByRef(all).get(node.data.op);
        if (!block) {
          setBlockProblem(`The definition of ${node.data.op} is not in this graph.`);
          return;
        }
        // Each block input receives what the wire into that slot carries.
        const report = reportRef.current;
        const inputShapes = block.inputs.map((_, k) => {
          const e = view.edges.find((x) => x.target === nodeId && handleIndex(x.targetHandle) === k);
          if (!e) return null;
          const info = report?.nodes[e.source];
          const port = /^out(\d+)$/.exec(e.sourceHandle ?? "");
          return (port ? info?.ports?.[Number(port[1])] : info?.shape) ?? null;
        });
        onOpenBlock({
          instance: nodeId,
          block,
          dependencies: usedBlocks(block.nodes, all),
          inputShapes,
          values: { ...(node.data.params ?? {}) },
        });
      },
    }),
    [blockProblem, library, onOpenBlock, store],
  );

  const addOp = useCallback(
    (op: string, at?: { x: number; y: number }, anchor: "center" | "corner" = "center") => {
      if (readOnly) return;
      const doc = store.getState().view;
      const id = nextId(idBase(op), new Set(doc.nodes.map((n) => n.id)));
      let position = at;
      if (!position) {
        const box = wrapper.current?.getBoundingClientRect();
        const center = box ? { x: box.left + box.width / 2, y: box.top + box.height / 2 } : { x: 400, y: 300 };
        position = flow.screenToFlowPosition(center);
      }
      const node: CanvasNode = {
        id,
        type: "op",
        // A drop centres the node under the pointer; the insert box puts its corner where the box was.
        position:
          anchor === "center"
            ? { x: Math.round(position.x - NODE_WIDTH / 2), y: Math.round(position.y - NODE_HEIGHT / 2) }
            : { x: Math.round(position.x), y: Math.round(position.y) },
        data: { kind: "op", op, params: {} },
        selected: true,
      };
      store.edit((d) => ({ ...d, nodes: [...d.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), node] }));
      setPanel("inspector");
    },
    [flow, readOnly, store],
  );

  const actions: InspectorActions = useMemo(
    () => ({
      setParam: (nodeId, name, value, visit) =>
        store.edit(
          (d) => ({
            ...d,
            nodes: d.nodes.map((n) => {
              if (n.id !== nodeId || n.type !== "op") return n;
              const params = { ...(n.data.params ?? {}) };
              if (value === UNSET) delete params[name];
              else params[name] = value;
              return { ...n, data: { ...n.data, params } };
            }),
          }),
          `${nodeId}.${name}#${visit}`,
        ),
      setInput: (nodeId, patch, visit) =>
        store.edit(
          (d) => ({ ...d, nodes: d.nodes.map((n) => (n.id === nodeId && n.type === "input" ? { ...n, data: { ...n.data, ...patch } } : n)) }),
          `${nodeId}.${Object.keys(patch).join(",")}#${visit}`,
        ),
    }),
    [store],
  );

  const isValidConnection = useCallback(
    (c: Connection | Edge) => !readOnly && connectionProblem(store.getState().view, opsByName, c, reportRef.current) === null,
    [opsByName, readOnly, store],
  );

  // A wire onto a taken input slot replaces the one there, in the same undo step.
  const onConnect = useCallback(
    (c: Connection) => {
      if (readOnly || connectionProblem(store.getState().view, opsByName, c, reportRef.current) !== null) return;
      const view = store.getState().view;
      const next = connectInDoc(view, c);
      if (next !== view) store.edit(() => next);
    },
    [opsByName, readOnly, store],
  );

  // A wire let go over a handle that refused it: say why, next to the pointer, for a few seconds.
  const onConnectEnd = useCallback(
    (event: MouseEvent | TouchEvent, cs: FinalConnectionState) => {
      if (readOnly || cs.isValid !== false || !cs.fromHandle || !cs.toHandle) return;
      const from = cs.fromHandle;
      const to = cs.toHandle;
      let message: string | null;
      if (from.type === to.type) message = from.type === "source" ? "draw the wire from an output to an input" : "an input takes its wire from an output";
      else {
        const [src, dst] = from.type === "source" ? [from, to] : [to, from];
        message = connectionProblem(store.getState().view, opsByName, { source: src.nodeId, sourceHandle: src.id, target: dst.nodeId, targetHandle: dst.id }, reportRef.current);
      }
      const box = wrapper.current?.getBoundingClientRect();
      if (!message || !box) return;
      const point = "changedTouches" in event ? event.changedTouches[0] : event;
      setRefusal({
        message,
        x: Math.max(8, Math.min(point.clientX - box.left + 14, box.width - 340)),
        y: Math.max(8, Math.min(point.clientY - box.top + 14, box.height - 60)),
        at: Date.now(),
      });
    },
    [opsByName, readOnly, store],
  );
  useEffect(() => {
    if (!refusal) return;
    const timer = window.setTimeout(() => setRefusal(null), REFUSAL_MS);
    return () => window.clearTimeout(timer);
  }, [refusal]);

  const deleteSelection = useCallback(() => {
    if (readOnly) return;
    const view = store.getState().view;
    const nodeIds = new Set(view.nodes.filter((n) => n.selected).map((n) => n.id));
    const edgeIds = new Set(view.edges.filter((e) => e.selected).map((e) => e.id));
    if (nodeIds.size === 0 && edgeIds.size === 0) return;
    store.edit((d) => removeFromDoc(d, nodeIds, edgeIds));
  }, [readOnly, store]);

  const copy = useCallback(() => {
    const ids = store.selectedIds();
    if (ids.size) clipboard = copySelection(store.getState().view, ids);
  }, [store]);

  const paste = useCallback(() => {
    if (readOnly || !clipboard) return;
    const fragment = clipboard;
    store.edit((d) => pasteFragment(d, fragment, { x: 40, y: 40 }).doc);
    // Pasting again steps further, like most drawing tools.
    clipboard = { ...fragment, nodes: fragment.nodes.map((n) => ({ ...n, position: { x: n.position.x + 40, y: n.position.y + 40 } })) };
  }, [readOnly, store]);

  // Fit leaves the corner that the minimap (or its toggle) takes free of nodes.
  const fitOptions = useCallback((): FitViewOptions => {
    const canvas = wrapper.current;
    if (!canvas) return { padding: 0.15, maxZoom: FIT_MAX_ZOOM };
    const box = canvas.getBoundingClientRect();
    const overlays = [...canvas.querySelectorAll(".react-flow__minimap, .minimap-toggle-panel")].map((el) => el.getBoundingClientRect());
    const corner = overlays.length
      ? { right: box.right - Math.min(...overlays.map((r) => r.left)), bottom: box.bottom - Math.min(...overlays.map((r) => r.top)) }
      : null;
    const nodes = flow.getNodes();
    const bounds = nodes.length ? flow.getNodesBounds(nodes) : null;
    return { padding: fitPadding({ width: box.width, height: box.height }, corner, bounds), maxZoom: FIT_MAX_ZOOM };
  }, [flow]);

  const fit = useCallback((duration = 200) => void flow.fitView({ ...fitOptions(), duration }), [fitOptions, flow]);

  // The first fit waits for React Flow to measure the nodes, so it knows where they end.
  const measured = useNodesInitialized();
  const fittedOnce = useRef(false);
  useEffect(() => {
    if (!measured || fittedOnce.current) return;
    fittedOnce.current = true;
    fit(0);
  }, [fit, measured]);

  const toggleMinimap = useCallback(() => {
    setShowMinimap((shown) => {
      try {
        if (shown) window.localStorage.setItem(MINIMAP_KEY, "hidden");
        else window.localStorage.removeItem(MINIMAP_KEY);
      } catch {
        // Storage may be off: the choice then lasts for this page only.
      }
      return !shown;
    });
  }, []);

  const autoLayout = useCallback(() => {
    if (readOnly) return;
    store.edit((d) => {
      const positions = layoutPositions(
        d.nodes.map((n) => n.id),
        d.edges,
      );
      return { ...d, nodes: d.nodes.map((n) => ({ ...n, position: positions.get(n.id)! })) };
    });
    window.setTimeout(() => fit(), 50);
  }, [fit, readOnly, store]);

  const loadTemplate = useCallback(
    (key: string) => {
      const t = TEMPLATES.find((x) => x.key === key);
      if (!t || readOnly) return;
      const hasWork = store.getState().committed.nodes.some((n) => n.type === "op");
      if (hasWork && !window.confirm(`Replace the canvas with the ${t.label} template? (Undo brings it back.)`)) return;
      store.edit(() => specToDoc(t.spec));
      window.setTimeout(() => fit(0), 50);
    },
    [fit, readOnly, store],
  );

  const openInsert = useCallback(
    (screen: { x: number; y: number }) => {
      if (readOnly) return;
      const box = wrapper.current!.getBoundingClientRect();
      setInsertAt({ screen: { x: screen.x - box.left, y: screen.y - box.top }, flow: flow.screenToFlowPosition(screen) });
    },
    [flow, readOnly],
  );

  const { onSave } = props;
  useEffect(() => {
    function onKey(e: KeyboardEvent) {
      const mod = e.ctrlKey || e.metaKey;
      const key = e.key.toLowerCase();
      if (mod && key === "s") {
        e.preventDefault();
        onSave();
        return;
      }
      if (isTyping(e.target)) return;
      if (mod && key === "z") {
        e.preventDefault();
        if (e.shiftKey) store.redo();
        else store.undo();
      } else if (mod && key === "y") {
        e.preventDefault();
        store.redo();
      } else if (mod && key === "c") copy();
      else if (mod && key === "x") {
        copy();
        deleteSelection();
      } else if (mod && key === "v") {
        e.preventDefault();
        paste();
      } else if (mod && key === "a") {
        e.preventDefault();
        store.select(new Set(store.getState().view.nodes.map((n) => n.id)));
      } else if (!mod && (e.key === "Delete" || e.key === "Backspace")) {
        e.preventDefault();
        deleteSelection();
      } else if (!mod && !e.altKey && (e.key === "/" || key === "a")) {
        e.preventDefault();
        const box = wrapper.current?.getBoundingClientRect();
        openInsert(pointer.current ?? (box ? { x: box.left + box.width / 2, y: box.top + box.height / 3 } : { x: 300, y: 200 }));
      } else if (!mod && key === "f") fit();
      else if (!mod && key === "l") autoLayout();
      else if (e.key === "Escape") store.select(new Set());
    }
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [autoLayout, copy, deleteSelection, fit, onSave, openInsert, paste, store]);

  const stateCanUndo = state.canUndo && !readOnly;
  const stateCanRedo = state.canRedo && !readOnly;

  return (
    <OpsContext.Provider value={opsByName}>
      <CheckContext.Provider value={check}>
        <ReadOnlyContext.Provider value={readOnly}>
          <div className="editor" data-testid="editor">
            <div className="toolbar" role="toolbar" aria-label="Canvas actions">
              <button type="button" data-testid="undo" aria-label="Undo (Ctrl-Z)" title="Undo (Ctrl-Z)" disabled={!stateCanUndo} onClick={() => store.undo()}>
                ↶ Undo
              </button>
              <button type="button" data-testid="redo" aria-label="Redo (Ctrl-Shift-Z)" title="Redo (Ctrl-Shift-Z)" disabled={!stateCanRedo} onClick={() => store.redo()}>
                ↷ Redo
              </button>
              <button type="button" data-testid="auto-layout" aria-label="Auto-layout (L)" title="Auto-layout (L)" disabled={readOnly} onClick={autoLayout}>
                Layout
              </button>
              <button type="button" data-testid="fit-view" aria-label="Zoom to fit (F)" title="Zoom to fit (F)" onClick={() => fit()}>
                Fit
              </button>
              {!readOnly && (
                <button
                  type="button"
                  data-testid="make-block"
                  title="Make a block of the selected nodes (it goes to the team's library)"
                  disabled={selectedOps === 0}
                  onClick={openMakeBlock}
                >
                  Make block…
                </button>
              )}
              {!readOnly && !blockMode && TEMPLATES.length > 0 && (
                <select aria-label="Load a template" data-testid="template-select" value="" onChange={(e) => loadTemplate(e.target.value)}>
                  <option value="">Template…</option>
                  {TEMPLATES.map((t) => (
                    <option key={t.key} value={t.key}>
                      {t.label}
                    </option>
                  ))}
                </select>
              )}
              <span className="spacer" />
              <div className="tabs" role="tablist" aria-label="Side panel">
                {(blockMode ? (["inspector", "code"] as SidePanel[]) : (["inspector", "revisions", "code"] as SidePanel[])).map((p) => (
                  <button key={p} type="button" role="tab" aria-selected={panel === p} data-testid={`tab-${p}`} className={panel === p ? "active" : undefined} onClick={() => setPanel(p)}>
                    {p === "inspector" ? "Parameters" : p === "revisions" ? "Revisions" : "Code"}
                  </button>
                ))}
              </div>
              {blockMode && (
                <>
                  <span className="block-mode-title" data-testid="block-mode-title">
                    {blockMode.title}
                  </span>
                  <button type="button" data-testid="block-close" onClick={blockMode.onClose}>
                    Back to the graph
                  </button>
                  {!readOnly && (
                    <button type="button" className="primary" data-testid="block-save-version" disabled={!blockMode.canSave || blockMode.saving} onClick={blockMode.onSaveVersion}>
                      {blockMode.saving ? "Saving…" : "Save block version"}
                    </button>
                  )}
                </>
              )}
              {!readOnly && !blockMode && (
                <button type="button" className="primary" data-testid="save" aria-label="Save a revision (Ctrl-S)" title="Save a revision (Ctrl-S)" disabled={!props.dirty} onClick={onSave}>
                  Save
                </button>
              )}
              {!readOnly && !blockMode && <TrainButton graphId={graphId} savedRevision={props.savedRevision} dirty={props.dirty} valid={check.report && !check.pending ? check.report.valid : null} />}
            </div>
            {props.banner}
            <div
              className={panel === "code" && codeWidth !== null ? "editor-body side-resized" : "editor-body"}
              style={panel === "code" && codeWidth !== null ? ({ "--side-width": `${codeWidth}px` } as React.CSSProperties) : undefined}
            >
              <Palette
                ops={ops}
                categories={props.categories}
                disabled={readOnly}
                onInsert={(op) => addOp(op)}
                library={library}
                libraryProblem={props.libraryProblem}
                onPlaceBlock={(b) => void placeBlock({ id: b.id, version: b.latest_version, name: b.name })}
              />
              <div
                className="canvas"
                ref={wrapper}
                data-testid="canvas"
                onMouseMove={(e) => {
                  pointer.current = { x: e.clientX, y: e.clientY };
                }}
                onDoubleClick={(e) => {
                  if ((e.target as HTMLElement).classList.contains("react-flow__pane")) openInsert({ x: e.clientX, y: e.clientY });
                }}
                onDragOver={(e) => {
                  if (e.dataTransfer.types.includes(OP_MIME) || e.dataTransfer.types.includes(BLOCK_MIME)) {
                    e.preventDefault();
                    e.dataTransfer.dropEffect = "copy";
                  }
                }}
                onDrop={(e) => {
                  const dragged = e.dataTransfer.getData(BLOCK_MIME);
                  if (dragged) {
                    e.preventDefault();
                    const { id, version } = JSON.parse(dragged) as { id: number; version: number };
                    const lib = library?.find((b) => b.id === id);
                    if (lib) void placeBlock({ id, version, name: lib.name }, flow.screenToFlowPosition({ x: e.clientX, y: e.clientY }));
                    return;
                  }
                  const op = e.dataTransfer.getData(OP_MIME);
                  if (!op) return;
                  e.preventDefault();
                  addOp(op, flow.screenToFlowPosition({ x: e.clientX, y: e.clientY }));
                }}
              >
                <ReactFlow<CanvasNode, Edge>
                  nodes={state.view.nodes}
                  edges={state.view.edges}
                  nodeTypes={nodeTypes}
                  edgeTypes={edgeTypes}
                  onNodesChange={store.onNodesChange}
                  onEdgesChange={store.onEdgesChange}
                  onConnect={onConnect}
                  onConnectEnd={onConnectEnd}
                  onSelectionContextMenu={(e) => {
                    if (readOnly) return;
                    e.preventDefault();
                    openMakeBlock();
                  }}
                  onNodeContextMenu={(e, node) => {
                    // A right click on one of several selected nodes offers the same as on the selection box.
                    if (readOnly || !node.selected || store.getState().view.nodes.filter((n) => n.selected && n.type === "op").length < 2) return;
                    e.preventDefault();
                    openMakeBlock();
                  }}
                  isValidConnection={isValidConnection}
                  nodesDraggable={!readOnly}
                  nodesConnectable={!readOnly}
                  deleteKeyCode={null}
                  selectionKeyCode="Shift"
                  multiSelectionKeyCode={["Meta", "Control"]}
                  zoomOnDoubleClick={false}
                  minZoom={0.1}
                  proOptions={{ hideAttribution: true }}
                  aria-label="Network canvas"
                >
                  <Background gap={16} />
                  {showMinimap && <MiniMap pannable zoomable ariaLabel="Minimap" />}
                  <Panel position="bottom-right" className={showMinimap ? "minimap-toggle-panel above-minimap" : "minimap-toggle-panel"}>
                    <button
                      type="button"
                      className="minimap-toggle"
                      data-testid="minimap-toggle"
                      aria-pressed={showMinimap}
                      title={showMinimap ? "Hide the minimap" : "Show the minimap"}
                      onClick={toggleMinimap}
                    >
                      {showMinimap ? "Hide map" : "Map"}
                    </button>
                  </Panel>
                  <Controls showInteractive={false} showFitView={false}>
                    <ControlButton onClick={() => fit()} title="Zoom to fit (F)" aria-label="Zoom to fit (F)" className="react-flow__controls-fitview">
                      ⤢
                    </ControlButton>
                  </Controls>
                </ReactFlow>
                {refusal && (
                  <div key={refusal.at} className="connect-refusal" role="alert" data-testid="connect-refusal" style={{ left: refusal.x, top: refusal.y }}>
                    {refusal.message}
                  </div>
                )}
                {panel === "code" && (
                  // The canvas got narrower or wider: fit again, so the minimap still covers no node.
                  <CodeWidthHandle panel={() => side.current} width={codeWidth} onWidth={setCodeWidth} onDone={() => window.setTimeout(() => fit(), 50)} />
                )}
                {insertAt && (
                  <InsertBox
                    ops={ops}
                    at={insertAt.screen}
                    onClose={() => setInsertAt(null)}
                    onPick={(op) => {
                      addOp(op, insertAt.flow, "corner");
                      setInsertAt(null);
                    }}
                  />
                )}
              </div>
              <aside className="side" aria-label="Details" ref={side}>
                {panel === "inspector" && (
                  <Inspector selected={selected} ops={opsByName} readOnly={readOnly} actions={actions} blockActions={blockActions} onMakeBlock={openMakeBlock} />
                )}
                {panel === "revisions" && !blockMode && <RevisionsPanel graphId={graphId} refreshKey={props.revisionsKey} current={props.savedRevision} onRestore={props.onRestore} />}
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
                onConfirm={(req) => void confirmMakeBlock(req)}
                onCancel={() => setMaking(null)}
              />
            )}
          </div>
        </ReadOnlyContext.Provider>
      </CheckContext.Provider>
    </OpsContext.Provider>
  );
}
