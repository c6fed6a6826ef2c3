// The "a teammate saved" notice: the newer revision the graph's detail names, and the words for it.

/** Who saved the newer revision, and when (the server's `latest`). */
export interface LatestInfo {
  number: number;
  author: string;
  createdAt: string | null;
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
function latestInfo(value: unknown): LatestInfo | null {
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

/** "10:42" (the local clock), or "" when there is no time. */
function clockTime(iso: string | null, locale?: string): string {
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
