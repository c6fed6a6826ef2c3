// Every piece of background work the browser shows (a dataset being read, an explanation being
// computed, a run's export being made, a server job) as one shape, so that JobProgress draws them
// all the same way: a phase, the fraction done when the work reports one, a label and the error.
import type { components } from "../api/api.gen";
import { describeDataError } from "../datasets/csvPreview";
import type { Dataset, Explanation, RunExports } from "../runs/types";

export type Job = components["schemas"]["Job"];

export type JobPhase = "waiting" | "working" | "done" | "failed";

export interface JobView {
  phase: JobPhase;
  /** 0..1 while working when the work reports how far it is; null otherwise. */
  fraction: number | null;
  /** "Waiting…", "Working… 42%", "Done", "Failed: <message>". */
  label: string;
  /** What went wrong, in words a user can act on; null unless failed. */
  error: string | null;
}

/** A fraction clamped to 0..1, or null when there is none (or it is not a number). */
function clampFraction(f: number | null | undefined): number | null {
  if (typeof f !== "number" || !Number.isFinite(f)) return null;
  return Math.min(1, Math.max(0, f));
}

/** The fraction as a whole percentage (0.424 -> 42). */
export function percent(fraction: number): number {
  return Math.round(fraction * 100);
}

/** The one view of a phase: its label says the phase, how far, or what went wrong. */
export function jobView(phase: JobPhase, fraction: number | null = null, error: string | null = null): JobView {
  const f = phase === "working" ? clampFraction(fraction) : null;
  const e = phase === "failed" ? error || "Something went wrong." : null;
  const label =
    phase === "waiting"
      ? "Waiting…"
      : phase === "working"
        ? f === null
          ? "Working…"
          : `Working… ${percent(f)}%`
        : phase === "done"
          ? "Done"
          : `Failed: ${e}`;
  return { phase, fraction: f, label, error: e };
}

/** A server job (GET /api/jobs/<id>/): queued waits, running works, cancelled ends as failed. */
export function fromJob(job: Pick<Job, "state" | "progress" | "error">): JobView {
  switch (job.state) {
    case "queued":
      return jobView("waiting");
    case "running":
      return jobView("working", job.progress);
    case "done":
      return jobView("done");
    case "cancelled":
      return jobView("failed", null, job.error?.message || "It was cancelled.");
    default:
      return jobView("failed", null, job.error?.message || "The job failed.");
  }
}

/** A dataset a worker reads: processing without a figure yet is still waiting for the worker. */
export function fromDataset(d: Pick<Dataset, "status" | "error"> & { progress?: number | null }): JobView {
  switch (d.status) {
    case "processing":
      return typeof d.progress === "number" ? jobView("working", d.progress) : jobView("waiting");
    case "ready":
      return jobView("done");
    default:
      return jobView("failed", null, describeDataError(d.error) || "The file could not be read.");
  }
}

/** An explanation: the engine reports no fraction, so running is an indeterminate bar. */
export function fromExplanation(e: Pick<Explanation, "status" | "error">): JobView {
  switch (e.status) {
    case "queued":
      return jobView("waiting");
    case "running":
      return jobView("working");
    case "succeeded":
      return jobView("done");
    default:
      return jobView("failed", null, e.error || "The explanation failed.");
  }
}

/** A run's export task (ONNX and the zip); null when nothing was asked for. */
export function fromExports(x: Pick<RunExports, "status" | "note">): JobView | null {
  switch (x.status) {
    case "pending":
      return jobView("working");
    case "ready":
      return jobView("done");
    case "failed":
      return jobView("failed", null, x.note || "The export failed.");
    default:
      return null;
  }
}
