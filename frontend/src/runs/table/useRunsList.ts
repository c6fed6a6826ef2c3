// One page of the team's runs as the server filters, sorts and counts them (GET /api/runs/),
// polled while a listed run is active. A filter expression the server refuses keeps the last good
// page and reports the message and its column for the filter box.
import { useCallback, useEffect, useState } from "react";
import { ApiError, apiRequest } from "../../api/client";
import type { Page } from "../../api/types";
import type { RunRow } from "../runsTable";
import { ACTIVE_STATUSES } from "../types";

const POLL_MS = 3000;

/** The server's word on a filter expression it could not read. */
export interface FilterError {
  message: string;
  column: number | null;
}

export interface RunsList {
  runs: RunRow[] | null;
  count: number;
  error: string | null;
  filterError: FilterError | null;
  reload: () => Promise<void>;
}

export function useRunsList(query: string | null): RunsList {
  const [page, setPage] = useState<Page<RunRow> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [filterError, setFilterError] = useState<FilterError | null>(null);

  const reload = useCallback(async () => {
    if (!query) return;
    try {
      setPage(await apiRequest<Page<RunRow>>("GET", `/api/runs/?${query}`));
      setError(null);
      setFilterError(null);
    } catch (e) {
      if (e instanceof ApiError && e.code === "invalid_filter") {
        const column = typeof e.body.column === "number" ? e.body.column : null;
        const field = (e.fields?.filter as string[] | undefined)?.[0];
        setFilterError({ message: field ?? e.message, column });
      } else setError((e as Error).message);
    }
  }, [query]);

  useEffect(() => {
    void reload();
  }, [reload]);

  const active = page?.results.some((r) => ACTIVE_STATUSES.has(r.status)) ?? false;
  useEffect(() => {
    if (!active) return;
    const id = window.setInterval(() => void reload(), POLL_MS);
    return () => window.clearInterval(id);
  }, [active, reload]);

  return { runs: page?.results ?? null, count: page?.count ?? 0, error, filterError, reload };
}
