// The canvas itself: React Flow with its minimap and controls, drops from the palette, the insert
// box, a refused wire's reason, and the handle that widens the code panel.
import { Background, type Connection, ControlButton, Controls, type Edge, type FinalConnectionState, MiniMap, Panel, ReactFlow, useReactFlow } from "@xyflow/react";
import { type RefObject, useMemo, useRef } from "react";
import type { OpSchema } from "../api/types";
import type { RunAction } from "./actions";
import { addOp } from "./actions/addOp";
import { placeBlock } from "./actions/blockInstance";
import { canConnect, connect, refuseConnection } from "./actions/connect";
import { openInsert } from "./actions/insert";
import { openMakeBlock } from "./actions/makeBlock";
import type { InsertAt, Point, Refusal } from "./actions/types";
import { fitSoon, fitView, toggleMinimap } from "./actions/view";
import type { LibraryBlock } from "./blockLibrary";
import { CodeWidthHandle } from "./CodePanel";
import { RemoteCursors, withPresence } from "./collab/PresenceUi";
import { usePresence } from "./collab/presence";
import { InsertBox } from "./InsertBox";
import type { CanvasDoc, CanvasNode } from "./model";
import { nodeTypes } from "./nodes";
import { BLOCK_MIME, OP_MIME } from "./Palette";
import { edgeTypes } from "./ShapeEdge";
import type { EditorStore } from "./store";

export interface EditorCanvasProps {
  run: RunAction;
  /** React Flow's changes (moves, selection) go to the store directly. */
  store: EditorStore;
  view: CanvasDoc;
  readOnly: boolean;
  ops: OpSchema[];
  library: LibraryBlock[] | null;
  canvas: RefObject<HTMLDivElement | null>;
  pointer: RefObject<Point | null>;
  showMinimap: boolean;
  refusal: Refusal | null;
  insertAt: InsertAt | null;
  onInsertClose: () => void;
  /** The code panel is open: its width can be dragged. */
  codeOpen: boolean;
  codeWidth: number | null;
  onCodeWidth: (width: number) => void;
  side: () => HTMLElement | null;
}

/** How often this person's pointer goes out to the others at most. */
const CURSOR_MS = 40;

export function EditorCanvas(p: EditorCanvasProps) {
  const { run, store, readOnly, library, showMinimap, refusal, insertAt } = p;
  // Wire handlers stay the same from render to render, as React Flow prefers.
  const wires = useMemo(
    () => ({
      onConnect: (c: Connection) => run(connect, c),
      onConnectEnd: (event: MouseEvent | TouchEvent, state: FinalConnectionState) => run(refuseConnection, { event, state }),
      isValidConnection: (c: Connection | Edge) => run(canConnect, c),
    }),
    [run],
  );
  // On a shared canvas: the others' selections and drags on the nodes, this pointer out to them.
  const presence = usePresence();
  const peers = presence?.peers;
  const nodes = useMemo(() => (peers ? withPresence(p.view.nodes, peers) : p.view.nodes), [p.view.nodes, peers]);
  const flow = useReactFlow();
  const cursorSent = useRef(0);
  const cursorLater = useRef<number | undefined>(undefined);
  // At most one pointer update per CURSOR_MS, and always the last position once the pointer rests.
  const sendCursor = (x: number, y: number, at: number) => {
    if (!presence) return;
    window.clearTimeout(cursorLater.current);
    const send = () => {
      cursorSent.current = performance.now();
      const p = flow.screenToFlowPosition({ x, y });
      presence.set("cursor", { x: Math.round(p.x), y: Math.round(p.y) });
    };
    if (at - cursorSent.current >= CURSOR_MS) send();
    else cursorLater.current = window.setTimeout(send, CURSOR_MS);
  };
  return (
    <div
      className="canvas"
      ref={p.canvas}
      data-testid="canvas"
      onMouseMove={(e) => {
        p.pointer.current = { x: e.clientX, y: e.clientY };
        sendCursor(e.clientX, e.clientY, performance.now());
      }}
      onMouseLeave={() => {
        window.clearTimeout(cursorLater.current);
        presence?.set("cursor", null);
      }}
      onDoubleClick={(e) => {
        if ((e.target as HTMLElement).classList.contains("react-flow__pane")) run(openInsert, { x: e.clientX, y: e.clientY });
      }}
      onDragOver={(e) => {
        if (e.dataTransfer.types.includes(OP_MIME) || e.dataTransfer.types.includes(BLOCK_MIME)) {
          e.preventDefault();
          e.dataTransfer.dropEffect = "copy";
        }
      }}
      onDrop={(e) => {
        const at = { x: e.clientX, y: e.clientY };
        const dragged = e.dataTransfer.getData(BLOCK_MIME);
        if (dragged) {
          e.preventDefault();
          const { id, version } = JSON.parse(dragged) as { id: number; version: number };
          const lib = library?.find((b) => b.id === id);
          if (lib) void run(placeBlock, { id, version, name: lib.name, screen: at });
          return;
        }
        const op = e.dataTransfer.getData(OP_MIME);
        if (!op) return;
        e.preventDefault();
        run(addOp, { op, screen: at });
      }}
    >
      <ReactFlow<CanvasNode, Edge>
        nodes={nodes}
        edges={p.view.edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={store.onNodesChange}
        onEdgesChange={store.onEdgesChange}
        onConnect={wires.onConnect}
        onConnectEnd={wires.onConnectEnd}
        onSelectionContextMenu={(e) => {
          if (readOnly) return;
          e.preventDefault();
          run(openMakeBlock, undefined);
        }}
        onNodeContextMenu={(e, node) => {
          // A right click on one of several selected nodes offers the same as on the selection box.
          if (readOnly || !node.selected || store.getState().view.nodes.filter((n) => n.selected && n.type === "op").length < 2) return;
          e.preventDefault();
          run(openMakeBlock, undefined);
        }}
        isValidConnection={wires.isValidConnection}
        nodesDraggable={!readOnly}
        nodesConnectable={!readOnly}
        deleteKeyCode={null}
        selectionKeyCode="Shift"
        // Shift-click adds a node to the selection as Ctrl/Cmd-click does (Shift-drag draws a box).
        multiSelectionKeyCode={["Meta", "Control", "Shift"]}
        zoomOnDoubleClick={false}
        minZoom={0.1}
        proOptions={{ hideAttribution: true }}
        aria-label="Network canvas"
      >
        <Background gap={16} />
        {peers && <RemoteCursors peers={peers} />}
        {showMinimap && <MiniMap pannable zoomable ariaLabel="Minimap" />}
        <Panel position="bottom-right" className={showMinimap ? "minimap-toggle-panel above-minimap" : "minimap-toggle-panel"}>
          <button
            type="button"
            className="minimap-toggle"
            data-testid="minimap-toggle"
            aria-pressed={showMinimap}
            title={showMinimap ? "Hide the minimap" : "Show the minimap"}
            onClick={() => run(toggleMinimap, undefined)}
          >
            {showMinimap ? "Hide map" : "Map"}
          </button>
        </Panel>
        <Controls showInteractive={false} showFitView={false}>
          <ControlButton onClick={() => run(fitView, undefined)} title="Zoom to fit (F)" aria-label="Zoom to fit (F)" className="react-flow__controls-fitview">
            ⤢
          </ControlButton>
        </Controls>
      </ReactFlow>
      {refusal && (
        <div key={refusal.at} className="connect-refusal" role="alert" data-testid="connect-refusal" style={{ left: refusal.x, top: refusal.y }}>
          {refusal.message}
        </div>
      )}
      {p.codeOpen && (
        // The canvas got narrower or wider: fit again, so the minimap still covers no node.
        <CodeWidthHandle panel={p.side} width={p.codeWidth} onWidth={p.onCodeWidth} onDone={() => run(fitSoon, undefined)} />
      )}
      {insertAt && (
        <InsertBox
          ops={p.ops}
          at={insertAt.screen}
          onClose={p.onInsertClose}
          onPick={(op) => {
            run(addOp, { op, at: insertAt.flow, anchor: "corner" });
            p.onInsertClose();
          }}
        />
      )}
    </div>
  );
}
