// What the runs page asks GET /api/runs/ (pure; tested in vitest): the filters, the `filter`
// expression, the server's ordering and the page. The server filters, sorts and counts; the table
// fetches pages of PAGE_SIZE as it scrolls (runPages.ts).
import { type Sort, orderingOf } from "./runsTable";
import type { RunStatus } from "./types";

/** Runs per page of the table. */
export const PAGE_SIZE = 100;

/** The server-side filters of GET /api/runs/. */
export interface RunFilters {
  status: RunStatus | "";
  graph: number | null;
  dataset: number | null;
  tag: string;
  q: string;
  /** An expression of the runs query language (docs/subsystems/runs.md). */
  filter: string;
}

export const NO_FILTERS: RunFilters = { status: "", graph: null, dataset: null, tag: "", q: "", filter: "" };

/** The list's query string: team, filters that are set, ordering, page (1-based) and page size. */
export function runsQuery(team: number, filters: RunFilters, sort: Sort, page = 1, pageSize = PAGE_SIZE): string {
  const query = new URLSearchParams({ team: String(team), page_size: String(pageSize) });
  if (page > 1) query.set("page", String(page));
  if (filters.status) query.set("status", filters.status);
  if (filters.graph) query.set("graph", String(filters.graph));
  if (filters.dataset) query.set("dataset", String(filters.dataset));
  if (filters.tag.trim()) query.set("tag", filters.tag.trim());
  if (filters.q.trim()) query.set("q", filters.q.trim());
  if (filters.filter.trim()) query.set("filter", filters.filter.trim());
  query.set("ordering", orderingOf(sort));
  return query.toString();
}

/** A filter error's place: the 1-based column the server names, inside the expression, or null. */
export function errorColumn(body: Record<string, unknown> | undefined, expression: string): number | null {
  const column = body?.column;
  if (typeof column !== "number" || !Number.isInteger(column) || column < 1) return null;
  return Math.min(column, expression.length + 1);
}
