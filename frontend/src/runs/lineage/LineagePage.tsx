// The lineage page (/app/runs/<id>/lineage, /app/models/<id>/versions/<n>/lineage): where a run or
// a model version came from and what came of it, drawn with React Flow (as the graph editor is)
// and laid out left to right; a node opens its page.
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
      title={href ? `Open ${node.label}` : node.label}
    >
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <div className="lineage-label">{node.label}</div>
      <div className="lineage-detail small">{lineageDetail(node)}</div>
      {node.kind === "run" && <div className="lineage-detail small">{lineageConfigLine(node)}</div>}
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
}

const nodeTypes = { lineage: LineageBox };

export default function LineagePage(props: { runId: number } | { modelId: number; version: number }) {
  const path =
    "runId" in props
      ? `/api/runs/${props.runId}/lineage/`
      : `/api/models/${props.modelId}/versions/${props.version}/lineage/`;
  const title = "runId" in props ? `Lineage of run #${props.runId}` : `Lineage of model ${props.modelId} v${props.version}`;
  const [lineage, setLineage] = useState<Lineage | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    apiRequest<Lineage>("GET", path).then(setLineage, (e: Error) => setError(e.message));
  }, [path]);

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
