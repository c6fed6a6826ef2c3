// An evaluation asked for as a job (POST .../evaluation/ with Prefer: respond-async), followed to
// its end: the one way the run page's panels ask the workers to evaluate weights.
import type { Job } from "../jobs/jobState";
import { runsApi } from "./api";
import type { EvaluationAnswer } from "./judgeTypes";

// How often a queued or running evaluation job is asked about.
export const JOB_POLL_MS = 500;

/** Evaluate `checkpoint` (or the downloads' weights) on the workers; `onJob` sees every state of
 * the job. Resolves to the evaluation; rejects with the job's error when it fails. */
export async function evaluateAsJob(
  runId: number,
  checkpoint: string | undefined,
  onJob: (job: Job) => void,
  wait: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => window.setTimeout(resolve, ms)),
): Promise<EvaluationAnswer> {
  let job = await runsApi.evaluate(runId, checkpoint);
  onJob(job);
  while (job.state === "queued" || job.state === "running") {
    await wait(JOB_POLL_MS);
    job = await runsApi.job(job.id);
    onJob(job);
  }
  if (job.state !== "done" || !job.result) throw new Error(job.error?.message || `The evaluation was ${job.state}.`);
  return job.result as unknown as EvaluationAnswer;
}
