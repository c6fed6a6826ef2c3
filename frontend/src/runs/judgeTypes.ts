// Readable names for the judging answers (evaluation, predict, samples): generated from
// webapp/runs/api/schema.py (api.gen.ts, `make gen-types`). Kept apart from types.ts, which others edit.
import type { Schema } from "../api/types";

export type EvaluationAnswer = Schema<"EvaluationAnswer">;
export type PerClassMetrics = Schema<"PerClassMetrics">;
export type MisclassifiedSample = Schema<"Misclassified">;
export type Reliability = Schema<"Reliability">;
export type RocCurve = Schema<"RocCurve">;
export type PrecisionRecallCurve = Schema<"PrecisionRecallCurve">;
export type PredictAnswer = Schema<"PredictAnswer">;
export type SampleRowsAnswer = Schema<"SampleRowsAnswer">;
export type SampleAnswer = Schema<"SampleAnswer">;
export type ColumnSummary = Schema<"ColumnSummary">;
/** An uploaded image as the network's input has it (the predict answer's `seen`). */
export type NetworkView = Schema<"NetworkView">;
