// The diff view: one revision's graph on a read-only canvas with nodes marked added (green),
// removed (red, from the older revision) and changed (amber), and a side list of every change.
import { Background, Controls, Handle, type NodeProps, type NodeTypes, Position, ReactFlow, ReactFlowProvider } from "@xyflow/react";
import { createContext, memo, useContext, useEffect, useMemo, useState } from "react";
import { apiRequest, api } from "../api/client";
import type { GraphSpec } from "../api/types";
import { type MarkedNode, type MarkedNodeData, type RevisionDiff, changeCount, formatValue, localDiff, markedView } from "./diff";

/** Opens the diff view of revision `from` against `to` (given by the editor page to the revisions panel). */
export const CompareContext = createContext<((from: number, to: number) => void) | null>(null);
export const useCompare = () => useContext(CompareContext);

const STATUS_WORD = {
  added: "added",
  removed: "removed",
  changed: "changed",
  same: "",
} as const;

function changeText(d: MarkedNodeData): string {
  const parts = d.opChange ? [`op: ${d.opChange.from} → ${d.opChange.to}`] : [];
  for (const c of d.changes) parts.push(`${c.name}: ${formatValue(c.from)} → ${formatValue(c.to)}`);
  return parts.join("\n");
}

function shortParams(params: Record<string, unknown>): string {
  return Object.entries(params)
    .slice(0, 3)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? `(${v.join(",")})` : String(v)}`)
    .join("  ");
}

function inputText(params: Record<string, unknown>): string {
  const shape = Array.isArray(params.shape) ? `[${params.shape.join(", ")}]` : "";
  return [shape, typeof params.dtype === "string" ? params.dtype : ""].filter(Boolean).join(" ");
}

const DiffNode = memo(function DiffNode({ id, data }: NodeProps<MarkedNode>) {
  const changes = changeText(data);
  return (
    <div className={`node diff-node diff-${data.status}`} data-testid={`diff-node-${id}`} data-status={data.status} title={changes || undefined}>
      {data.kind !== "input" && <Handle type="target" position={Position.Top} isConnectable={false} />}
      <div className="node-head">
        <span className="node-op">{data.label}</span>
        <span className="node-id">{data.kind === "output" ? "" : id}</span>
      </div>
      {data.status === "changed" ? (
        <ul className="diff-node-changes" data-testid={`diff-changes-${id}`}>
          {changes.split("\n").map((line) => (
            <li key={line}>{line}</li>
          ))}
        </ul>
      ) : (
        <div className="node-params">{data.kind === "input" ? inputText(data.params) : shortParams(data.params)}</div>
      )}
      {data.status !== "same" && <span className={`diff-badge diff-badge-${data.status}`}>{STATUS_WORD[data.status]}</span>}
      {data.kind !== "output" && <Handle type="source" position={Position.Bottom} isConnectable={false} />}
    </div>
  );
});

const diffNodeTypes: NodeTypes = { diff: DiffNode };

interface Loaded {
  from: GraphSpec;
  to: GraphSpec;
  diff: RevisionDiff;
  local: boolean;
}

async function loadDiff(graphId: number, from: number, to: number): Promise<Loaded> {
  const [a, b, server] = await Promise.all([
    api.revision(graphId, from),
    api.revision(graphId, to),
    apiRequest<RevisionDiff>("GET", `/api/graphs/${graphId}/diff/?from=${from}&to=${to}`).catch(() => null),
  ]);
  return {
    from: a.spec,
    to: b.spec,
    diff: server ?? localDiff(a.spec, b.spec, from, to),
    local: server === null,
  };
}

export interface DiffPanelProps {
  graphId: number;
  from: number;
  to: number;
  onClose: () => void;
  onRestore: (n: number) => void;
}

export function DiffPanel(props: DiffPanelProps) {
  return (
    <ReactFlowProvider>
      <DiffView {...props} />
    </ReactFlowProvider>
  );
}

function DiffView({ graphId, from, to, onClose, onRestore }: DiffPanelProps) {
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setLoaded(null);
    setError(null);
    loadDiff(graphId, from, to)
      .then((l) => live && setLoaded(l))
      .catch((e) => live && setError((e as Error).message));
    return () => {
      live = false;
    };
  }, [graphId, from, to]);

  const view = useMemo(() => (loaded ? markedView(loaded.from, loaded.to, loaded.diff) : null), [loaded]);
  const edges = useMemo(
    () =>
      (view?.edges ?? []).map((e) => ({
        id: e.id,
        source: e.source,
        target: e.target,
        className: `diff-edge diff-edge-${e.status}`,
        animated: e.status === "added",
      })),
    [view],
  );

  useEffect(() => {
    function onKey(e: KeyboardEvent) {
      if (e.key === "Escape") onClose();
    }
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);

  const d = loaded?.diff;
  return (
    <div className="editor diff-view" data-testid="diff-view">
      <div className="toolbar" role="toolbar" aria-label="Diff actions">
        <strong data-testid="diff-title">
          Revision {from} → revision {to}
        </strong>
        {d && <span className="muted">{changeCount(d) === 0 && d.lines.length === 0 ? "no changes" : `${d.lines.length} change${d.lines.length === 1 ? "" : "s"}`}</span>}
        <span className="diff-legend" aria-hidden>
          <span className="diff-key diff-added">added</span>
          <span className="diff-key diff-removed">removed</span>
          <span className="diff-key diff-changed">changed</span>
        </span>
        <span className="spacer" />
        <button type="button" data-testid="diff-restore" title={`Put revision ${to} on the canvas (undo brings your work back)`} onClick={() => onRestore(to)}>
          Restore revision {to}
        </button>
        <button type="button" className="primary" data-testid="diff-close" onClick={onClose}>
          Back to editing
        </button>
      </div>
      <div className="diff-body">
        <div className="canvas" data-testid="diff-canvas">
          {error && (
            <p className="error center" role="alert">
              {error}
            </p>
          )}
          {!loaded && !error && <p className="muted center">Loading…</p>}
          {view && (
            <ReactFlow<MarkedNode>
              nodes={view.nodes}
              edges={edges}
              nodeTypes={diffNodeTypes}
              nodesDraggable={false}
              nodesConnectable={false}
              elementsSelectable={false}
              deleteKeyCode={null}
              minZoom={0.1}
              fitView
              fitViewOptions={{ padding: 0.15, maxZoom: 1 }}
              proOptions={{ hideAttribution: true }}
              aria-label="Diff canvas"
            >
              <Background gap={16} />
              <Controls showInteractive={false} />
            </ReactFlow>
          )}
        </div>
        <aside className="side diff-side" aria-label="Changes" data-testid="diff-list">
          <h2>Changes</h2>
          {d && d.lines.length === 0 && <p className="muted">The two revisions have the same graph.</p>}
          {d && d.lines.length > 0 && (
            <ul className="diff-lines">
              {d.lines.map((line, i) => (
                <li key={i} className={lineClass(line)}>
                  {line}
                </li>
              ))}
            </ul>
          )}
          {d && (d.nodes.added.length > 0 || d.nodes.removed.length > 0 || d.nodes.changed.length > 0) && <h3>Nodes</h3>}
          {d && (
            <ul className="diff-entries">
              {d.nodes.added.map((n) => (
                <li key={`a-${n.id}`} className="diff-added" data-testid={`diff-entry-${n.id}`}>
                  <strong>{n.id}</strong> ({n.op}) added
                </li>
              ))}
              {d.nodes.removed.map((n) => (
                <li key={`r-${n.id}`} className="diff-removed" data-testid={`diff-entry-${n.id}`}>
                  <strong>{n.id}</strong> ({n.op}) removed
                </li>
              ))}
              {d.nodes.changed.map((c) => (
                <li key={`c-${c.id}`} className="diff-changed" data-testid={`diff-entry-${c.id}`}>
                  <strong>{c.id}</strong> changed
                  <ul>
                    {c.op && (
                      <li>
                        op: {c.op.from} → {c.op.to}
                      </li>
                    )}
                    {c.params.map((p) => (
                      <li key={p.name}>
                        {p.name}: {formatValue(p.from)} → {formatValue(p.to)}
                      </li>
                    ))}
                  </ul>
                </li>
              ))}
            </ul>
          )}
          <p className="muted small">Back to editing returns to your canvas as you left it (unsaved changes included).</p>
          {loaded?.local && <p className="muted small">Computed in the browser (the server's diff was not available).</p>}
        </aside>
      </div>
    </div>
  );
}

function lineClass(line: string): string {
  if (/ added$/.test(line)) return "diff-added";
  if (/ removed$/.test(line)) return "diff-removed";
  return "diff-changed";
}
