// The audit page's pure parts: the query its filters make, and before -> after in one line.
import type { Schema } from "../api/types";

/** One entry of GET /api/teams/<id>/audit/. */
export type AuditEntry = Schema<"AuditEntry">;

/** What the page filters by; dates are the date inputs' yyyy-mm-dd (empty: no bound). */
export interface AuditFilters {
  actor: string;
  action: string;
  object: string;
  from: string;
  to: string;
}

export const NO_FILTERS: AuditFilters = { actor: "", action: "", object: "", from: "", to: "" };

/** The actions the filter offers: each kind's prefix, then each action (the server takes either). */
export const ACTION_CHOICES: { value: string; label: string }[] = [
  { value: "", label: "any action" },
  ...[
    ["member.", "members: added, role changed, removed"],
    ["invitation.", "invitations"],
    ["token.", "tokens"],
    ["team.", "team"],
    ["graph.", "graphs"],
    ["dataset.", "datasets"],
    ["run.", "runs"],
    ["model.", "models"],
  ].map(([value, label]) => ({ value, label })),
  ...[
    "member.added", "member.role_changed", "member.removed",
    "graph.created", "graph.renamed", "graph.deleted",
    "dataset.created", "dataset.renamed", "dataset.deleted",
    "run.created", "run.renamed", "run.cancelled", "run.exported",
    "model.created", "model.version_registered", "model.alias_moved", "model.alias_dropped",
  ].map((value) => ({ value, label: value })),
];

/** The query string (without "?") the filters ask for; `until` is the last day, which the server keeps whole. */
export function auditQuery(filters: AuditFilters, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  const pairs: [string, string][] = [
    ["actor", filters.actor],
    ["action", filters.action],
    ["object", filters.object],
    ["since", filters.from],
    ["until", filters.to],
  ];
  for (const [name, value] of pairs) if (value.trim()) params.set(name, value.trim());
  for (const [name, value] of Object.entries(extra)) params.set(name, value);
  return params.toString();
}

function shown(value: unknown): string {
  if (value === null || value === undefined) return "—";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** before -> after compactly: only the keys that differ ("role: editor → viewer"); a creation
 * lists what it was made with, a deletion what it had. */
export function changeText(before: unknown, after: unknown): string {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys
      .filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]))
      .map((k) => `${k}: ${shown(before[k])} → ${shown(after[k])}`)
      .join("; ");
  }
  const side = isObject(after) ? after : isObject(before) ? before : null;
  if (side === null) return "";
  const text = Object.entries(side)
    .filter(([, v]) => v !== null && v !== "")
    .map(([k, v]) => `${k}: ${shown(v)}`)
    .join("; ");
  return isObject(after) ? text : `was ${text}`;
}

/** The object column: "run 42 (first)". */
export function objectText(entry: Pick<AuditEntry, "object_type" | "object_id" | "object_repr">): string {
  const id = `${entry.object_type} ${entry.object_id}`.trim();
  return entry.object_repr && entry.object_repr !== id ? `${id} (${entry.object_repr})` : id;
}
