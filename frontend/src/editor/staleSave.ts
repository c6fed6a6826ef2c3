// Saves that name their base revision, the 409 a stale base answers, and the "a teammate saved" notice.
import { ApiError, apiRequest } from "../api/client";
import type { GraphSpec, Revision } from "../api/types";

/** Who saved the newer revision, and when (the server's `latest`). */
export interface LatestInfo {
  number: number;
  author: string;
  createdAt: string | null;
}

/** A refused save: the newer revision and the base the editor had sent. */
export interface StaleBase {
  latest: LatestInfo;
  base: number | null;
  message: string;
}

function authorOf(by: unknown): string {
  if (by && typeof by === "object") {
    const u = by as { username?: unknown; name?: unknown; id?: unknown };
    if (typeof u.username === "string") return u.username;
    if (typeof u.name === "string") return u.name;
    return u.id === undefined ? "" : String(u.id);
  }
  return by === null || by === undefined ? "" : String(by);
}

/** The server's `latest` object ({number, created_by, created_at}) as LatestInfo; null when it is not one. */
export function latestInfo(value: unknown): LatestInfo | null {
  if (!value || typeof value !== "object") return null;
  const v = value as {
    number?: unknown;
    created_by?: unknown;
    created_at?: unknown;
  };
  const number = typeof v.number === "number" ? v.number : Number(v.number);
  if (!Number.isInteger(number) || number < 1) return null;
  return {
    number,
    author: authorOf(v.created_by),
    createdAt: typeof v.created_at === "string" ? v.created_at : null,
  };
}

/** The stale-base refusal inside an error (an ApiError 409 `stale_base`); null for any other error. */
export function parseStaleBase(error: unknown): StaleBase | null {
  if (!(error instanceof ApiError) || error.status !== 409 || error.code !== "stale_base") return null;
  const body = error.body ?? {};
  // The error envelope puts extra data beside code/message; tolerate it nested under detail/extra too.
  const nested = [body, body.detail, body.extra].find((x) => x && typeof x === "object" && "latest" in (x as object)) as Record<string, unknown> | undefined;
  const latest = latestInfo(nested?.latest);
  if (!latest) return null;
  const base = nested?.base;
  return {
    latest,
    base: typeof base === "number" ? base : null,
    message: error.message,
  };
}

/** "10:42" (the local clock), or "" when there is no time. */
export function clockTime(iso: string | null, locale?: string): string {
  if (!iso) return "";
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return "";
  return at.toLocaleTimeString(locale, { hour: "2-digit", minute: "2-digit" });
}

/** "alice saved revision 5 at 10:42" (words a person reads; no author or time left out gracefully). */
export function savedSentence(latest: LatestInfo, locale?: string): string {
  const who = latest.author || "Someone";
  const time = clockTime(latest.createdAt, locale);
  return `${who} saved revision ${latest.number}${time ? ` at ${time}` : ""}`;
}

/** The graph detail's newer revision, when it has moved past the one the editor has open. */
export function newerThanOpen(graph: { latest_revision?: number | null; latest?: unknown }, open: number | null): LatestInfo | null {
  const number = graph.latest_revision ?? null;
  if (number === null || (open !== null && number <= open)) return null;
  return latestInfo(graph.latest) ?? { number, author: "", createdAt: null };
}

/** POST a new revision based on `base` (the revision the editor started from); `force` saves over a newer one. */
export function saveRevisionOnBase(graphId: number, spec: GraphSpec, base: number | null, force = false): Promise<Revision> {
  const body: Record<string, unknown> = { spec };
  if (base !== null) body.base = base;
  if (force) body.force = true;
  return apiRequest<Revision>("POST", `/api/graphs/${graphId}/revisions/`, body);
}
