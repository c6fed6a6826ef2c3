// Readable names for the sweep API's wire types (REST /api/sweeps/, webapp/sweeps/api.py), all
// generated (api.gen.ts, `make gen-types`).
import type { Schema } from "../api/types";

export type SweepStatus = Schema<"Sweep">["status"];
export type SweepStrategy = Schema<"Sweep">["strategy"];
export type SweepPruner = Schema<"Sweep">["pruner"];
export type TrialState = Schema<"SweepTrial">["state"];

/** The search space: a dotted config path or `nodes.<node id>.<param>` -> its dimension. */
export type SearchSpace = Schema<"SweepCreateRequest">["space"];
export type SpaceDimension = SearchSpace[string];

/** Which validation metric the sweep optimises and which way (the server always fills both). */
export type Objective = Required<Schema<"Objective">>;
export type SweepProgress = Schema<"SweepProgress">;
export type SweepTrial = Schema<"SweepTrial">;
export type SweepBest = Schema<"SweepBest">;

/** A sweep as the list has it (GET /api/sweeps/); the detail adds `trials`. */
export type Sweep = Schema<"Sweep"> & { trials?: SweepTrial[] };
export type SweepDetail = Schema<"SweepDetail">;

/** What POST /api/sweeps/ takes. */
export type SweepCreateBody = Schema<"SweepCreateRequest">;
