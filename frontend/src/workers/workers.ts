// The workers page's words and order (pure; tested in vitest): what a worker is doing, its devices,
// and the team's queue in the order it will start.
import type { Schema } from "../api/types";
import type { QueueInfo } from "../runs/placement";
import type { Run } from "../runs/types";

/** A worker as GET /api/workers/ gives it. */
export type WorkerRow = Schema<"Worker">;

/** A queued run with its place (GET /api/runs/<id>/'s `queue`; null until read). */
export type QueuedRun = Run & { queue?: QueueInfo | null };

/** "training run 12 (name)", "idle", "training another team's run", or "gone (last seen 10:42)". */
export function workerDoing(w: Pick<WorkerRow, "alive" | "busy" | "current_run" | "last_seen" | "trains">, locale?: string): string {
  if (!w.alive) return `not heard from since ${new Date(w.last_seen).toLocaleTimeString(locale, { hour: "2-digit", minute: "2-digit" })}`;
  const run = w.current_run as { id?: number; name?: string } | null;
  if (run?.id) return `training run ${run.id}${run.name ? ` (${run.name})` : ""}`;
  if (w.busy) return "training another team's run";
  return w.trains ? "idle: ready for a run" : "idle (short jobs only)";
}

/** "cuda:0, cuda:1 · up to 2 per run", "cpu". */
export function devicesText(w: Pick<WorkerRow, "devices" | "capacity" | "kind">): string {
  const list = w.devices.length ? w.devices.join(", ") : w.kind;
  return w.capacity > 1 ? `${list} · up to ${w.capacity} per run` : list;
}

/** The queue in the order it will start: by the server's position when known, else priority then age. */
export function queueOrder(runs: readonly QueuedRun[]): QueuedRun[] {
  return [...runs].sort((a, b) => {
    const pa = a.queue?.position;
    const pb = b.queue?.position;
    if (pa != null && pb != null && pa !== pb) return pa - pb;
    const prio = (b.priority ?? 0) - (a.priority ?? 0);
    if (prio) return prio;
    return Date.parse(a.created_at) - Date.parse(b.created_at) || a.id - b.id;
  });
}

/** The priority field as sent: a whole number, else the text (the server's 400 says what is wrong). */
export function priorityValue(text: string): number | string {
  const t = text.trim();
  return /^[+-]?\d+$/.test(t) ? Number(t) : t;
}

/** "train any, cpu (1–8 devices) · short": the queues it consumes, train queues grouped by kind. */
export function queuesText(queues: readonly string[]): string {
  const kinds = new Map<string, number[]>();
  const other: string[] = [];
  for (const q of queues) {
    const m = /^train\.([a-z]+)\.(\d+)$/.exec(q);
    if (m) kinds.set(m[1], [...(kinds.get(m[1]) ?? []), Number(m[2])]);
    else other.push(q);
  }
  const parts: string[] = [];
  if (kinds.size) {
    const sizes = [...kinds.values()].flat();
    const lo = Math.min(...sizes);
    const hi = Math.max(...sizes);
    parts.push(`train ${[...kinds.keys()].sort().join(", ")} (${lo === hi ? lo : `${lo}–${hi}`} device${hi === 1 ? "" : "s"})`);
  }
  return [...parts, ...other].join(" · ");
}
