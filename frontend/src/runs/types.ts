// Readable names for the wire types of datasets, runs, metrics, explanations and the run stream.
// All generated (api.gen.ts, `make gen-types`): REST bodies from the serializers and the models of
// webapp/{runs,datasets}/schema.py, stream frames from webapp/runs/stream/event_types.py.
import type { Schema } from "../api/types";

export type DatasetKind = Schema<"DatasetKindEnum">;
export type DatasetStatus = Schema<"DatasetStatusEnum">;
/** The engine's DataError JSON: the message plus where the problem is. */
export type DataErrorJson = Schema<"DataErrorJson">;
export type DatasetSummary = Schema<"DatasetSummary">;
export type Dataset = Schema<"Dataset">;
export type BuiltinDataset = Schema<"BuiltinDataset">;
export type DatasetPreview = Schema<"DatasetPreview">;

export type RunStatus = Schema<"RunStatusEnum">;

export const ACTIVE_STATUSES: ReadonlySet<RunStatus> = new Set<RunStatus>(["queued", "running", "interrupted"]);

export type RunProgress = Schema<"Progress">;
/** A run's downloads (GET /api/runs/<id>/ `exports`): which files exist, and where ONNX is. */
export type RunExports = Schema<"RunExports">;
export type Run = Schema<"Run">;

/** GET /api/runs/<id>/metrics/: one series per key, parallel arrays. */
export type MetricSeriesJson = Schema<"MetricSeries">;
export type MetricsAnswer = Schema<"MetricsAnswer">;
export type Checkpoint = Schema<"CheckpointJson">;

export type ExplanationStatus = Schema<"ExplanationStatusEnum">;
/** One of the engine's explanation methods (GET /api/explanations/methods/). */
export type ExplanationMethod = Schema<"ExplanationMethod">;
export type ExplanationResult = Schema<"ExplanationResult">;
export type Explanation = Schema<"Explanation">;

// --- the stream (ws/runs/<id>/) ----------------------------------------------------------------

export type MetricEvent = Schema<"MetricEvent">;
export type StatusEvent = Schema<"StatusEvent">;
export type LogEvent = Schema<"LogEvent">;
export type CheckpointEvent = Schema<"CheckpointEvent">;
export type ExplanationEvent = Schema<"ExplanationEvent">;
/** The export task finished: the run's downloads now. */
export type ExportEvent = Schema<"ExportEvent">;
/** A stored event: it carries the run's id and its sequence number. */
export type RunEvent = Schema<"RunEvent">;
export type StateFrame = Schema<"StateFrame">;
export type ReplayedFrame = Schema<"ReplayedFrame">;
export type StreamFrame = Schema<"RunStreamFrame">;
