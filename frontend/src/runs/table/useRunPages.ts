// The runs list as the virtualised table reads it: a RunPageStore per query (runPages.ts) over
// GET /api/runs/, its first page asked at once (it brings the count), the pages in view asked as
// the table scrolls, the pages in view fetched again while a run in them is active. A filter
// expression the server refuses is reported with its column for the filter box; the last good
// store stays on screen meanwhile.
import { useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import { ApiError, apiRequest } from "../../api/client";
import type { Page } from "../../api/types";
import { RunPageStore } from "../runPages";
import { PAGE_SIZE } from "../runsQuery";
import type { RunRow } from "../runsTable";
import { ACTIVE_STATUSES } from "../types";

const POLL_MS = 3000;

/** Pages of 100 kept at most: 3,000 runs in memory whatever the filter's count. */
export const MAX_PAGES = 30;

/** The server's word on a filter expression it could not read. */
export interface FilterError {
  message: string;
  column: number | null;
}

export interface RunPages {
  /** The store on screen (the last one whose first page answered), or null before any. */
  store: RunPageStore<RunRow> | null;
  count: number;
  error: string | null;
  filterError: FilterError | null;
  /** Tell the store which rows are in view (it fetches their pages). */
  inView: (first: number, last: number) => void;
}

function filterErrorOf(e: unknown): FilterError | null {
  if (!(e instanceof ApiError) || e.code !== "invalid_filter") return null;
  const column = typeof e.body.column === "number" ? e.body.column : null;
  const field = (e.fields?.filter as string[] | undefined)?.[0];
  return { message: field ?? e.message, column };
}

/** `query`: the list's query string without `page` (runsQuery with its page size). */
export function useRunPages(query: string | null): RunPages {
  const fresh = useMemo(
    () =>
      query === null
        ? null
        : new RunPageStore<RunRow>((page) => apiRequest<Page<RunRow>>("GET", `/api/runs/?${query}${page > 1 ? `&page=${page}` : ""}`), {
            pageSize: PAGE_SIZE,
            maxPages: MAX_PAGES,
          }),
    [query],
  );
  const [shown, setShown] = useState<RunPageStore<RunRow> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [filterError, setFilterError] = useState<FilterError | null>(null);
  const view = useRef<[number, number]>([0, PAGE_SIZE - 1]);

  // A new query: its first page, then it replaces the store on screen (a refused filter keeps the old).
  useEffect(() => {
    if (!fresh) return;
    let live = true;
    void fresh.ensure(0, PAGE_SIZE - 1).then(() => {
      if (!live) return;
      if (fresh.count === null) {
        const f = filterErrorOf(fresh.error);
        setFilterError(f);
        if (!f) setError((fresh.error as Error | null)?.message ?? "The runs could not be read.");
        return;
      }
      setError(null);
      setFilterError(null);
      setShown((old) => {
        if (old && old !== fresh) old.close();
        return fresh;
      });
      view.current = [0, PAGE_SIZE - 1];
    });
    return () => {
      live = false;
    };
  }, [fresh]);

  useSyncExternalStore(shown?.subscribe ?? noSubscribe, shown?.getVersion ?? zero, shown?.getVersion ?? zero);

  // While a run in view is queued or running, its pages are read again.
  const [first, last] = view.current;
  const active = shown?.loadedIn(first, last).some((r) => ACTIVE_STATUSES.has(r.status)) ?? false;
  useEffect(() => {
    if (!active || !shown) return;
    const id = window.setInterval(() => void shown.refresh(...view.current), POLL_MS);
    return () => window.clearInterval(id);
  }, [active, shown]);

  return {
    store: shown,
    count: shown?.count ?? 0,
    error: error ?? (shown?.error ? (shown.error as Error).message : null),
    filterError,
    inView: (a, b) => {
      view.current = [a, b];
      void shown?.ensure(a, b);
    },
  };
}

const noSubscribe = () => () => {};
const zero = () => 0;
