// A version's formats for other runtimes (.pt2, int8, AOTInductor): the build job, the KServe
// manifest, and the figures as the version page draws them.
import type { components } from "../api/api.gen";
import { apiRequest } from "../api/client";
import type { Job } from "../jobs/jobState";

export type FormatFigures = components["schemas"]["FormatFigures"];

/** The formats the page offers, in the order it draws them, with their names for people. */
export const FORMAT_LABELS: Record<string, string> = {
  pt2: ".pt2 (torch.export)",
  int8: "int8 weights (torchao)",
  aoti: "AOTInductor .pt2",
};

const JOB_POLL_MS = 700;

export const formatsApi = {
  build: (model: number, version: number, formats: string[]) =>
    apiRequest<Job>("POST", `/api/models/${model}/versions/${version}/formats/`, { formats }),
  job: (id: number) => apiRequest<Job>("GET", `/api/jobs/${id}/`),
  /** The KServe InferenceService as YAML text. */
  kserveYaml: async (model: number, version: number): Promise<string> => {
    const response = await fetch(`/api/models/${model}/versions/${version}/kserve/?format=yaml`, {
      credentials: "same-origin",
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`The manifest could not be read (${response.status}).`);
    return text;
  },
};

export function downloadUrl(model: number, version: number, format: string): string {
  return `/api/models/${model}/versions/${version}/download/?format=${encodeURIComponent(format)}`;
}

/** Build `formats` as a job and follow it until it ends; `onJob` sees every state on the way. */
export async function buildFormats(
  model: number,
  version: number,
  formats: string[],
  onJob: (job: Job) => void,
  wait: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => window.setTimeout(resolve, ms)),
): Promise<Job> {
  let job = await formatsApi.build(model, version, formats);
  onJob(job);
  while (job.state === "queued" || job.state === "running") {
    await wait(JOB_POLL_MS);
    job = await formatsApi.job(job.id);
    onJob(job);
  }
  if (job.state !== "done") throw new Error(job.error?.message || `Building the formats was ${job.state}.`);
  return job;
}

/** 17972 -> "17.6 KiB". */
export function formatSize(bytes: number | undefined): string {
  if (bytes === undefined) return "–";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The metric and its change against fp32: "accuracy 0.9000 (-0.0333 vs fp32)", "±0" when none. */
export function formatDelta(figures: FormatFigures): string {
  const delta = figures.accuracy_delta;
  if (delta === undefined) return "–";
  const metric = figures.metric ?? "accuracy";
  const value = figures.value === undefined ? "" : ` ${figures.value.toFixed(4)}`;
  const change = delta === 0 ? "±0" : `${delta > 0 ? "+" : ""}${delta.toFixed(4)}`;
  return `${metric}${value} (${change} vs fp32)`;
}

/** "0.21 ms (fp32 0.03 ms, 7.0×)": a format's median latency against fp32's. */
export function formatLatency(ms: number | undefined, fp32: number | undefined): string {
  if (ms === undefined) return "–";
  const own = `${ms < 1 ? ms.toFixed(3) : ms.toFixed(2)} ms`;
  if (fp32 === undefined || fp32 <= 0) return own;
  return `${own} (fp32 ${fp32 < 1 ? fp32.toFixed(3) : fp32.toFixed(2)} ms, ${(ms / fp32).toFixed(1)}×)`;
}

/** The built formats in the page's order (pt2, int8, aoti, then anything else). */
export function orderedFormats(formats: Record<string, FormatFigures>): [string, FormatFigures][] {
  const order = Object.keys(FORMAT_LABELS);
  return Object.entries(formats).sort(
    ([a], [b]) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99) || a.localeCompare(b),
  );
}
