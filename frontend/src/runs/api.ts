// REST calls of the datasets and runs pages.
import { apiRequest, resultsOf } from "../api/client";
import type { Page } from "../api/types";
import type {
  BuiltinDataset,
  Checkpoint,
  Dataset,
  DatasetPreview,
  Explanation,
  ExplanationMethod,
  MetricsAnswer,
  Run,
} from "./types";

/** Everything POST /api/runs/ takes (the graph's latest revision unless `revision` is given). */
export interface RunCreateBody {
  team?: number;
  graph: number;
  revision?: number;
  dataset: number;
  config: Record<string, unknown>;
}

/** What POST /api/runs/<id>/explanations/ takes. */
export interface ExplainBody {
  index: number;
  method: string;
  target?: number | null;
  layer?: string | null;
}

export const runsApi = {
  builtins: async () => (await apiRequest<{ results: BuiltinDataset[] }>("GET", "/api/datasets/builtins/")).results,
  datasets: async (team: number) =>
    resultsOf(await apiRequest<Page<Dataset> | Dataset[]>("GET", `/api/datasets/?team=${team}&page_size=500`)),
  dataset: (id: number) => apiRequest<Dataset>("GET", `/api/datasets/${id}/`),
  addBuiltin: (team: number, builtin: string, name?: string) =>
    apiRequest<Dataset>("POST", "/api/datasets/", name ? { team, builtin, name } : { team, builtin }),
  deleteDataset: (id: number) => apiRequest<void>("DELETE", `/api/datasets/${id}/`),
  preview: (id: number) => apiRequest<DatasetPreview>("GET", `/api/datasets/${id}/preview/`),

  runs: async (team: number, graph?: number | null) =>
    resultsOf(
      await apiRequest<Page<Run> | Run[]>("GET", `/api/runs/?team=${team}&page_size=200${graph ? `&graph=${graph}` : ""}`),
    ),
  run: (id: number) => apiRequest<Run>("GET", `/api/runs/${id}/`),
  createRun: (body: RunCreateBody) => apiRequest<Run>("POST", "/api/runs/", body),
  cancelRun: (id: number) => apiRequest<Run>("POST", `/api/runs/${id}/cancel/`, {}),
  metrics: (id: number, maxPoints: number) =>
    apiRequest<MetricsAnswer>("GET", `/api/runs/${id}/metrics/?max_points=${maxPoints}`),
  checkpoints: (id: number) => apiRequest<Checkpoint[]>("GET", `/api/runs/${id}/checkpoints/`),
  explanations: async (id: number) =>
    resultsOf(await apiRequest<Page<Explanation> | Explanation[]>("GET", `/api/runs/${id}/explanations/?page_size=50`)),
  explain: (id: number, body: ExplainBody) => apiRequest<Explanation>("POST", `/api/runs/${id}/explanations/`, body),
  explanation: (id: number) => apiRequest<Explanation>("GET", `/api/explanations/${id}/`),
  /** The engine's explanation methods (GET /api/explanations/methods/), asked once per page load. */
  explanationMethods: (): Promise<ExplanationMethod[]> => {
    methodsRequest ??= apiRequest<{ methods: ExplanationMethod[] }>("GET", "/api/explanations/methods/").then(
      (answer) => answer.methods,
      (e: unknown) => {
        methodsRequest = null;
        throw e;
      },
    );
    return methodsRequest;
  },
};

let methodsRequest: Promise<ExplanationMethod[]> | null = null;

/** Download URL of a succeeded run's export. */
export function exportUrl(runId: number, format: "safetensors" | "python" | "onnx" | "config" | "zip"): string {
  return `/api/runs/${runId}/export/?format=${format}`;
}

/** WebSocket URL of a run's stream, resuming after `since`. */
export function streamUrl(runId: number, since: number, loc: { protocol: string; host: string } = location): string {
  const scheme = loc.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${loc.host}/ws/runs/${runId}/?since=${since}`;
}
