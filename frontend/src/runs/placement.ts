// Where a run trains or why it waits: the words of the run page's placement line (RunPlacement.tsx).
// Reads the fields GET /api/runs/<id>/ gained with issue 13 (worker, device, queue) through a
// local shape, so it works before and after the wire types are regenerated.
import type { Run } from "./types";

export interface QueueInfo {
  position: number;
  ahead: number;
  waiting_for: "team_limit" | "no_fitting_worker" | "behind" | "kueue";
  detail: string;
}

export interface TeamLimits {
  max_concurrent_runs?: number | null;
  max_devices_per_run?: number | null;
}

type Placed = Pick<Run, "status" | "worker"> & { device?: string; queue?: QueueInfo | null; priority?: number };

const REASONS: Record<QueueInfo["waiting_for"], string> = {
  team_limit: "waiting for the team's limit",
  no_fitting_worker: "waiting for a fitting worker",
  behind: "waiting its turn",
  kueue: "waiting for Kueue",
};

/** One line: "training on w1@host (cuda:0)", "queued: #3, waiting its turn (behind 2 queued runs)", or "". */
export function placementText(run: Placed): string {
  if (run.status === "running" && run.worker) return `training on ${run.worker}${run.device ? ` (${run.device})` : ""}`;
  if (run.status === "queued" && run.queue) {
    const { position, waiting_for, detail } = run.queue;
    return `queued: #${position}, ${REASONS[waiting_for] ?? waiting_for} (${detail})`;
  }
  if (run.status !== "queued" && run.device && run.worker) return `trained on ${run.worker} (${run.device})`;
  return "";
}

/** The team's limits in words, or "" when it has none. */
export function limitsText(team: TeamLimits | null | undefined): string {
  if (!team) return "";
  const parts: string[] = [];
  if (team.max_concurrent_runs != null) parts.push(`at most ${team.max_concurrent_runs} run${team.max_concurrent_runs === 1 ? "" : "s"} at once`);
  if (team.max_devices_per_run != null) parts.push(`at most ${team.max_devices_per_run} device${team.max_devices_per_run === 1 ? "" : "s"} per run`);
  return parts.length ? `team limits: ${parts.join(", ")}` : "";
}
