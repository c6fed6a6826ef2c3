// The lineage page (/app/runs/<id>/lineage, /app/models/<id>/versions/<n>/lineage,
// /app/datasets/<id>/versions/<n>/lineage): where a run or a model version came from and what came
// of it, or which runs and models used a dataset version, drawn with React Flow (as the graph
// editor is) and laid out left to right; the node it starts from is highlighted, a node opens its page.
import { Background, Controls, Handle, type Node, type NodeProps, Position, ReactFlow } from "@xyflow/react";
import { useEffect, useMemo, useState } from "react";
import { apiRequest } from "../../api/client";
import { TopBar } from "../../auth/TopBar";
import { navigate } from "../../router";
import {
  type Lineage,
  LINEAGE_NODE_HEIGHT,
  LINEAGE_NODE_WIDTH,
  type LineageNode,
  lineageConfigLine,
  lineageDetail,
  lineageHref,
  lineageLayout,
} from "./lineage";

type FlowNode = Node<{ node: LineageNode; root: boolean }, "lineage">;

function LineageBox({ data }: NodeProps<FlowNode>) {
  const { node, root } = data;
  const href = lineageHref(node);
  return (
    <div
      className={`lineage-node lineage-${node.kind}${root ? " lineage-root" : ""}`}
      style={{ width: LINEAGE_NODE_WIDTH, height: LINEAGE_NODE_HEIGHT }}
      data-testid={`lineage-node-${node.id}`}
      data-kind={node.kind}
      data-root={root ? "true" : undefined}
      aria-current={root ? "true" : undefined}
      title={href ? `Open ${node.label}` : node.label}
    >
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <div className="lineage-label">
        {root && <span className="lineage-start">start</span>}
        {node.label}
      </div>
      <div className="lineage-detail small">{lineageDetail(node)}</div>
      {node.kind === "run" && <div className="lineage-detail small">{lineageConfigLine(node)}</div>}
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
}

const nodeTypes = { lineage: LineageBox };

type Start = { runId: number } | { modelId: number; version: number } | { datasetId: number; version: number };

/** The API path and the page's title for a starting point. */
export function lineageStart(start: Start): { path: string; title: string } {
  if ("runId" in start) return { path: `/api/runs/${start.runId}/lineage/`, title: `Lineage of run #${start.runId}` };
  if ("modelId" in start)
    return {
      path: `/api/models/${start.modelId}/versions/${start.version}/lineage/`,
      title: `Lineage of model ${start.modelId} v${start.version}`,
    };
  return {
    path: `/api/datasets/${start.datasetId}/versions/${start.version}/lineage/`,
    title: `Lineage of dataset ${start.datasetId} v${start.version}`,
  };
}

export default function LineagePage(props: Start) {
  const { path, title: fallback } = lineageStart(props);
  const [lineage, setLineage] = useState<Lineage | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    apiRequest<Lineage>("GET", path).then(setLineage, (e: Error) => setError(e.message));
  }, [path]);

  const rootNode = lineage?.nodes.find((n) => n.id === lineage.root);
  const title = "datasetId" in props && rootNode ? `Lineage of ${rootNode.label}` : fallback;
  const unused = "datasetId" in props && lineage !== null && lineage.nodes.length === 1;

  const { nodes, edges } = useMemo(() => {
    if (!lineage) return { nodes: [], edges: [] };
    const at = lineageLayout(lineage.nodes, lineage.edges);
    return {
      nodes: lineage.nodes.map(
        (n): FlowNode => ({
          id: n.id,
          type: "lineage",
          position: at.get(n.id) ?? { x: 0, y: 0 },
          data: { node: n, root: n.id === lineage.root },
          draggable: false,
          connectable: false,
        }),
      ),
      edges: lineage.edges.map((e, i) => ({
        id: `e${i}`,
        source: e.source,
        target: e.target,
        label: e.kind === "trained_on" || e.kind === "checkpoint" ? "" : e.kind.replace("_", " "),
        labelStyle: { fontSize: 11 },
      })),
    };
  }, [lineage]);

  return (
    <div className="page">
      <TopBar>
        <span className="graph-name">{title}</span>
      </TopBar>
      <main className="lineage-page" data-testid="lineage-page">
        {error && (
          <p className="error center" role="alert">
            {error}
          </p>
        )}
        {!lineage && !error && <p className="muted center">Loading…</p>}
        {"datasetId" in props && (
          <p className="muted small" data-testid="lineage-question">
            Which runs and models used this data: the runs pinned to this version, their checkpoints, the runs started from them,
            and the model versions registered from any of them.
          </p>
        )}
        {unused && (
          <p className="muted" data-testid="lineage-unused">
            No run has trained on this version yet.
          </p>
        )}
        {lineage?.truncated && (
          <p className="warn small">The lineage is larger than what is drawn: it was cut at the node limit.</p>
        )}
        {lineage && (
          <div className="lineage-canvas">
            <ReactFlow<FlowNode>
              nodes={nodes}
              edges={edges}
              nodeTypes={nodeTypes}
              fitView
              fitViewOptions={{ maxZoom: 1 }}
              nodesDraggable={false}
              nodesConnectable={false}
              onNodeClick={(_, n) => {
                const href = lineageHref(n.data.node);
                if (href) navigate(href);
              }}
              proOptions={{ hideAttribution: true }}
            >
              <Background />
              <Controls showInteractive={false} />
            </ReactFlow>
          </div>
        )}
      </main>
    </div>
  );
}
