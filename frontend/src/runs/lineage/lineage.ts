// The lineage of a run or a model version (GET /api/runs/<id>/lineage/): laid out left to right
// with dagre (data on the left, models and aliases on the right), and where each node links to.
import { Graph, layout } from "@dagrejs/dagre";
import type { Schema } from "../../api/types";

/** The lineage answer (GET /api/runs/<id>/lineage/, GET /api/models/<id>/versions/<n>/lineage/). */
export type Lineage = Schema<"Lineage">;
export type LineageNode = Lineage["nodes"][number];
export type LineageEdge = Lineage["edges"][number];

export const LINEAGE_NODE_WIDTH = 220;
export const LINEAGE_NODE_HEIGHT = 70;

/** Top-left corners for every node: ranked along the edges, left to right. */
export function lineageLayout(
  nodes: Pick<LineageNode, "id">[],
  edges: Pick<LineageEdge, "source" | "target">[],
): Map<string, { x: number; y: number }> {
  const g = new Graph({ multigraph: true });
  g.setGraph({ rankdir: "LR", nodesep: 24, ranksep: 64, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  const known = new Set(nodes.map((n) => n.id));
  for (const n of nodes) g.setNode(n.id, { width: LINEAGE_NODE_WIDTH, height: LINEAGE_NODE_HEIGHT });
  edges.forEach((e, i) => {
    if (known.has(e.source) && known.has(e.target) && e.source !== e.target) g.setEdge(e.source, e.target, {}, `e${i}`);
  });
  layout(g);
  const out = new Map<string, { x: number; y: number }>();
  for (const n of nodes) {
    const p = g.node(n.id) as { x: number; y: number };
    out.set(n.id, { x: Math.round(p.x - LINEAGE_NODE_WIDTH / 2), y: Math.round(p.y - LINEAGE_NODE_HEIGHT / 2) });
  }
  return out;
}

/** The app page a node opens (under /app), or null when it has none. */
export function lineageHref(node: LineageNode): string | null {
  const data = node.data as Record<string, unknown>;
  switch (node.kind) {
    case "run":
    case "checkpoint":
      return `/runs/${String(data.run)}`;
    case "dataset":
      return "/datasets";
    case "model_version":
    case "alias":
      return `/models/${String(data.model)}`;
    default:
      return null;
  }
}

/** The second line of a node: what it is, in a few words. */
export function lineageDetail(node: LineageNode): string {
  const data = node.data as Record<string, unknown>;
  switch (node.kind) {
    case "run":
      return `#${String(data.run)} · ${String(data.graph_name)} rev ${String(data.revision)} · seed ${String(data.seed)}`;
    case "dataset":
      return typeof data.digest === "string" && data.digest
        ? `dataset · sha256 ${data.digest.slice(0, 12)}`
        : `dataset ${String(data.dataset)}`;
    case "checkpoint":
      return `checkpoint of run ${String(data.run)}${data.available ? ` · step ${String(data.step)}` : " · pruned"}`;
    case "model_version":
      return `model version`;
    case "alias":
      return `alias of ${String(data.model_name)}`;
    default:
      return "";
  }
}

/** True when the run trains (or trained) on a CUDA device: its weights may then differ on a repeat. */
export function onCuda(run: { device: string; need: { kind: string }; config: Record<string, unknown> }): boolean {
  const asked = typeof run.config.device === "string" ? run.config.device : "";
  return run.device.startsWith("cuda") || run.need.kind === "gpu" || asked.startsWith("cuda");
}

/** What may differ between two CUDA runs of the same config unless deterministic mode is on. */
export const CUDA_NONDETERMINISTIC = [
  "matrix products (cuBLAS picks a workspace and reduction order per call)",
  "convolutions (cuDNN autotuning chooses algorithms by timing)",
  "the backward pass of scatter/index_add, embeddings and gathers (atomic adds in any order)",
  "the backward pass of interpolation/upsampling and adaptive pooling",
  "the CTC and negative log-likelihood losses' reductions on some shapes",
];

/** A run node's third line: its status and the config's headline (epochs, optimizer, lr). */
export function lineageConfigLine(node: LineageNode): string {
  if (node.kind !== "run") return "";
  const data = node.data as { status?: string; config?: Record<string, unknown> };
  const config = data.config ?? {};
  const parts = [String(data.status ?? "")];
  if (config.epochs != null) parts.push(`${String(config.epochs)} epochs`);
  if (config.optimizer != null) parts.push(`${String(config.optimizer)} lr ${String(config.lr)}`);
  if (config.deterministic) parts.push("deterministic");
  return parts.join(" · ");
}
