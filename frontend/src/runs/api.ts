// REST calls of the datasets and runs pages.
import { apiRequest, resultsOf, uploadForm } from "../api/client";
import type { Page, Schema } from "../api/types";
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
import type { EvaluationAnswer, PredictAnswer, SampleAnswer, SampleRowsAnswer } from "./judgeTypes";
import type { StepWindow } from "./series";
import type { Job } from "../jobs/jobState";

/** Everything POST /api/runs/ takes (the graph's latest revision unless `revision` is given). */
export type RunCreateBody = Schema<"RunCreateRequest">;

/** GET /api/runs/compare/: each run's series, in the order of the ids asked for. */
export type CompareAnswer = Schema<"CompareAnswer">;

/** What POST /api/runs/<id>/explanations/ takes. */
export type ExplainBody = Schema<"ExplanationCreateRequest">;

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
  /** Steps from..to of some series: every stored point when the window holds at most maxPoints. */
  metricsWindow: (id: number, keys: string[], window: StepWindow, maxPoints: number) =>
    apiRequest<MetricsAnswer>(
      "GET",
      `/api/runs/${id}/metrics/?${metricQuery(keys, window, maxPoints)}`,
    ),
  /** Many runs' series in one request (the comparison view). */
  compare: (ids: number[], keys: string[], maxPoints: number, window?: StepWindow) =>
    apiRequest<CompareAnswer>("GET", `/api/runs/compare/?ids=${ids.join(",")}&${metricQuery(keys, window, maxPoints)}`),
  checkpoints: (id: number) => apiRequest<Checkpoint[]>("GET", `/api/runs/${id}/checkpoints/`),
  explanations: async (id: number) =>
    resultsOf(await apiRequest<Page<Explanation> | Explanation[]>("GET", `/api/runs/${id}/explanations/?page_size=50`)),
  explain: (id: number, body: ExplainBody) => apiRequest<Explanation>("POST", `/api/runs/${id}/explanations/`, body),
  explanation: (id: number) => apiRequest<Explanation>("GET", `/api/explanations/${id}/`),
  /** The engine's evaluation on the test split: the downloads' weights, or a checkpoint (404 until computed). */
  evaluation: (id: number, checkpoint?: string) =>
    apiRequest<EvaluationAnswer>("GET", `/api/runs/${id}/evaluation/${checkpoint ? `?checkpoint=${encodeURIComponent(checkpoint)}` : ""}`),
  /** Evaluate the downloads' weights or a checkpoint as a job on the workers (202 and the job;
   * its result is the evaluation, also stored): poll it with `job`. */
  evaluate: (id: number, checkpoint?: string) =>
    apiRequest<Job>("POST", `/api/runs/${id}/evaluation/`, checkpoint ? { checkpoint } : {}, undefined, { Prefer: "respond-async" }),
  job: (id: number) => apiRequest<Job>("GET", `/api/jobs/${id}/`),
  /** The trained model's answer for a typed row, numbers or a test index. */
  predict: (id: number, body: { input: Record<string, unknown> | unknown[] } | { index: number }) =>
    apiRequest<PredictAnswer>("POST", `/api/runs/${id}/predict/`, body),
  /** The trained model's answer for an uploaded image (multipart). */
  predictImage: async (id: number, image: Blob, name = "image.png") => {
    const form = new FormData();
    form.append("image", image, name);
    return (await uploadForm<PredictAnswer>(`/api/runs/${id}/predict/`, form, () => undefined)).data;
  },
  /** Where each sample of a split is in the user's own file. */
  sampleRows: (id: number, split = "test") => apiRequest<SampleRowsAnswer>("GET", `/api/runs/${id}/samples/${split}/`),
  /** A table sample's raw values as uploaded (images: use sampleUrl as an <img> source). */
  sample: (id: number, index: number, split = "test") =>
    apiRequest<SampleAnswer>("GET", `/api/runs/${id}/samples/${split}/${index}/`),
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

/** `keys=a,b&max_points=N[&from_step=&to_step=]` of the metric endpoints. */
export function metricQuery(keys: string[], window: StepWindow | null | undefined, maxPoints: number): string {
  const query = new URLSearchParams({ max_points: String(maxPoints) });
  if (keys.length) query.set("keys", keys.join(","));
  if (window) {
    query.set("from_step", String(window.from));
    query.set("to_step", String(window.to));
  }
  return query.toString();
}

/** URL of one sample as uploaded: a PNG for image data (an <img> source). */
export function sampleUrl(runId: number, index: number, split = "test"): string {
  return `/api/runs/${runId}/samples/${split}/${index}/`;
}

/** Download URL of a succeeded run's export. */
export function exportUrl(runId: number, format: "safetensors" | "python" | "onnx" | "config" | "zip"): string {
  return `/api/runs/${runId}/export/?format=${format}`;
}

/** WebSocket URL of a run's stream, resuming after `since`. */
export function streamUrl(runId: number, since: number, loc: { protocol: string; host: string } = location): string {
  const scheme = loc.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${loc.host}/ws/runs/${runId}/?since=${since}`;
}
