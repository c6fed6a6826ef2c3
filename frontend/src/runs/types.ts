// Wire types of datasets, runs, metrics, explanations and the run stream (architecture.md "Service II").

export type DatasetKind = "builtin" | "csv" | "images" | "tensors";
export type DatasetStatus = "processing" | "ready" | "failed";

/** The engine's DataError JSON: the message plus where the problem is. */
export interface DataErrorJson {
  message: string;
  row?: number | null;
  column?: string | null;
  entry?: string | null;
  field?: string | null;
}

export interface DatasetSummary {
  task?: "classification" | "regression" | null;
  feature_shape?: number[];
  rows?: { total?: number; train?: number; val?: number; test?: number };
  num_classes?: number | null;
  classes?: string[];
  feature_names?: string[];
  target_name?: string;
  columns?: { name: string; kind: string; missing?: number; role?: string; distinct?: number }[];
  class_counts?: Record<string, number>;
  problems?: DataErrorJson[];
  [key: string]: unknown;
}

export interface Dataset {
  id: number;
  team: number;
  name: string;
  kind: DatasetKind;
  status: DatasetStatus;
  options: Record<string, unknown>;
  summary: DatasetSummary;
  error: DataErrorJson | null;
  original_filename: string;
  size: number;
  created_by: { id: number; username: string } | null;
  created_at: string;
}

export interface BuiltinDataset {
  name: string;
  title: string;
  task: string;
  feature_shape: number[];
  num_classes: number | null;
  rows: number;
  description: string;
}

export type DatasetPreview =
  | { kind: "table"; columns: string[]; rows: unknown[][] }
  | { kind: "images"; samples: { label: string; png: string }[] };

export type RunStatus = "queued" | "running" | "succeeded" | "failed" | "cancelled" | "interrupted";

export const ACTIVE_STATUSES: ReadonlySet<RunStatus> = new Set(["queued", "running", "interrupted"]);

export interface RunProgress {
  epoch: number;
  step: number;
  total_steps: number | null;
  fraction: number | null;
  eta_seconds: number | null;
}

/** A run's downloads (GET /api/runs/<id>/ `exports`): which files exist, and where ONNX is. */
export interface RunExports {
  /** The export task (ONNX + zip): none | pending | ready | failed. */
  status: "none" | "pending" | "ready" | "failed";
  safetensors: boolean;
  python: boolean;
  config: boolean;
  zip: boolean;
  /** true: ready; "pending": being made; "unavailable": not for this graph (see note); false: never asked for. */
  onnx: boolean | "pending" | "unavailable";
  note: string;
}

export interface Run {
  id: number;
  team: number;
  graph: number;
  graph_name: string;
  graph_revision: number;
  revision: number;
  dataset: number;
  dataset_name: string;
  config: Record<string, unknown>;
  recipe: Record<string, unknown>;
  status: RunStatus;
  progress: RunProgress;
  latest_metrics: Record<string, number | null>;
  final_metrics: Record<string, unknown>;
  error: string;
  cancel_requested: boolean;
  attempts: number;
  max_attempts: number;
  created_by: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  last_seq: number;
  stream: string;
  exports: RunExports;
}

/** GET /api/runs/<id>/metrics/: one series per key, parallel arrays. */
export interface MetricSeriesJson {
  step: number[];
  epoch: number[];
  value: (number | null)[];
}

export interface MetricsAnswer {
  run: number;
  last_seq: number;
  series: Record<string, MetricSeriesJson>;
}

export interface Checkpoint {
  step: number;
  epoch: number;
  name: string;
  available: boolean;
  created_at: string;
}

export type ExplanationStatus = "queued" | "running" | "succeeded" | "failed";

/** One of the engine's explanation methods (GET /api/explanations/methods/). */
export interface ExplanationMethod {
  name: string;
  label: string;
  has_delta: boolean;
  needs_layer: boolean;
  help: string;
}

export interface ExplanationResult {
  method: string;
  target: number | null;
  prediction: number | null;
  probabilities?: number[] | null;
  output?: number[] | null;
  delta?: number | null;
  layer?: string | null;
  shape?: number[];
  feature_names?: string[] | null;
  [key: string]: unknown;
}

export interface Explanation {
  id: number;
  run: number;
  method: string;
  sample: { index?: number; input?: unknown };
  target: number | null;
  layer: string;
  status: ExplanationStatus;
  result: ExplanationResult | null;
  error: string;
  image: string | null;
  created_at: string;
  finished_at: string | null;
}

// --- the stream ------------------------------------------------------------------------------

interface EventBase {
  run: number;
  seq: number;
}

export interface MetricEvent extends EventBase {
  type: "metric";
  step: number;
  epoch: number;
  values: Record<string, number | null>;
  /** On live events of the worker only (replayed ones have none). */
  progress?: RunProgress;
}

export interface StatusEvent extends EventBase {
  type: "status";
  status: RunStatus;
  detail?: string;
  error?: string;
  step?: number;
  cancel_observed_step?: number | null;
  /** The run's progress when the status changed (events stored before it existed have none). */
  progress?: RunProgress;
  /** On the final status of a run that trained. */
  final_metrics?: Record<string, unknown>;
  /** On "succeeded": the downloads (ONNX usually still pending). */
  exports?: RunExports;
}

export interface LogEvent extends EventBase {
  type: "log";
  level: string;
  message: string;
  step?: number;
}

export interface CheckpointEvent extends EventBase {
  type: "checkpoint";
  step: number;
  epoch?: number;
  name: string;
}

export interface ExplanationEvent extends EventBase {
  type: "explanation";
  id: number;
  status: ExplanationStatus;
  method: string;
  error?: string;
}

/** The export task finished: the run's downloads now. */
export interface ExportEvent extends EventBase {
  type: "export";
  status: RunExports["status"];
  exports: RunExports;
}

export type RunEvent = MetricEvent | StatusEvent | LogEvent | CheckpointEvent | ExplanationEvent | ExportEvent;

export interface StateFrame {
  type: "state";
  run: Run;
  seq: number;
}

export interface ReplayedFrame {
  type: "replayed";
  seq: number;
}

export type StreamFrame = StateFrame | ReplayedFrame | RunEvent;
