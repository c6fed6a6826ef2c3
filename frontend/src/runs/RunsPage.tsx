// The team's runs as a table (/app/runs, ?graph= for one graph): name, status, who, when, duration,
// graph revision, dataset, the configuration fields and graph parameters that differ among the
// listed runs, final and best metrics. Click a header to sort (runsTable.ts); the filters are the list's query parameters
// (applied by the server); tick 2-20 runs and press Compare.
import { useCallback, useEffect, useMemo, useState } from "react";
import { api, apiRequest, resultsOf } from "../api/client";
import type { GraphSummary, Page } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { navigate } from "../router";
import { runsApi } from "./api";
import {
  COMPARE_MAX,
  COMPARE_MIN,
  DEFAULT_SORT,
  NO_FILTERS,
  type RunFilters,
  type RunRow,
  type Sort,
  canCompare,
  nextSort,
  runsQuery,
  selectedInOrder,
  sortRuns,
  tableColumns,
} from "./runsTable";
import { RunsFilters } from "./table/RunsFilters";
import { RunsTable } from "./table/RunsTable";
import { useGraphParams } from "./table/useGraphParams";
import { ACTIVE_STATUSES, type Dataset } from "./types";

const POLL_MS = 3000;

export function RunsPage({ graphId }: { graphId: number | null }) {
  const { team } = useSession();
  const [runs, setRuns] = useState<RunRow[] | null>(null);
  const [graphs, setGraphs] = useState<GraphSummary[]>([]);
  const [datasets, setDatasets] = useState<Dataset[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [filters, setFilters] = useState<Omit<RunFilters, "graph">>(NO_FILTERS);
  // What is typed in the text and tag boxes, sent once typing pauses.
  const [typed, setTyped] = useState({ q: "", tag: "" });
  const [sort, setSort] = useState<Sort>(DEFAULT_SORT);
  const [selected, setSelected] = useState<ReadonlySet<number>>(new Set());

  useEffect(() => {
    const timer = window.setTimeout(() => setFilters((f) => (f.q === typed.q && f.tag === typed.tag ? f : { ...f, ...typed })), 300);
    return () => window.clearTimeout(timer);
  }, [typed]);

  const query = team ? runsQuery(team.id, { ...filters, graph: graphId }) : null;
  const load = useCallback(async () => {
    if (!query) return;
    try {
      setRuns(resultsOf(await apiRequest<Page<RunRow> | RunRow[]>("GET", `/api/runs/?${query}`)));
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [query]);

  useEffect(() => {
    void load();
  }, [load]);

  useEffect(() => {
    if (!team) return;
    void filterChoices(team.id).then(([g, d]) => {
      setGraphs(g);
      setDatasets(d);
    });
  }, [team]);

  const active = runs?.some((r) => ACTIVE_STATUSES.has(r.status)) ?? false;
  useEffect(() => {
    if (!active) return;
    const id = window.setInterval(() => void load(), POLL_MS);
    return () => window.clearInterval(id);
  }, [active, load]);

  const graphParams = useGraphParams(runs);
  const columns = useMemo(() => tableColumns(runs ?? [], graphParams), [runs, graphParams]);
  const all = useMemo(() => [...columns.fixed, ...columns.config, ...columns.graph, ...columns.final, ...columns.best], [columns]);
  const rows = useMemo(() => sortRuns(runs ?? [], all.find((c) => c.id === sort.column), sort.direction), [runs, all, sort]);
  const chosen = selectedInOrder(rows, selected);
  const filtered = graphId !== null || Object.values(filters).some(Boolean);

  return (
    <div className="page">
      <TopBar />
      <main className="wide-page runs-page" data-testid="runs-page">
        <div className="panel-head">
          <h1>Runs{team ? ` of ${team.name}` : ""}</h1>
          <button
            type="button"
            className="primary"
            data-testid="runs-compare"
            disabled={!canCompare(chosen.length)}
            title={canCompare(chosen.length) ? "Open these runs side by side" : `Tick ${COMPARE_MIN} to ${COMPARE_MAX} runs to compare them`}
            onClick={() => navigate(`/compare?ids=${chosen.join(",")}`)}
          >
            Compare ({chosen.length})
          </button>
        </div>
        <RunsFilters
          filters={filters}
          typed={typed}
          graphId={graphId}
          graphs={graphs}
          datasets={datasets}
          onFilters={setFilters}
          onTyped={setTyped}
        />
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {runs === null && team && <p className="muted">Loading…</p>}
        {runs && runs.length === 0 && (
          <p className="muted" data-testid="no-runs">
            {filtered ? "No runs match these filters." : "No runs yet. Open a graph, save it, and press Train."}
          </p>
        )}
        {runs && runs.length > 0 && (
          <RunsTable
            rows={rows}
            columns={columns}
            sort={sort}
            onSort={(id) => setSort(nextSort(sort, id))}
            selected={selected}
            chosen={chosen}
            onSelect={setSelected}
            onTag={(t) => setTyped({ ...typed, tag: t })}
          />
        )}
      </main>
    </div>
  );
}

/** The team's graphs and datasets for the filters (an error leaves a filter empty). */
async function filterChoices(team: number): Promise<[GraphSummary[], Dataset[]]> {
  return Promise.all([
    api.graphs(team).then(resultsOf, () => [] as GraphSummary[]),
    runsApi.datasets(team).catch(() => [] as Dataset[]),
  ]);
}
