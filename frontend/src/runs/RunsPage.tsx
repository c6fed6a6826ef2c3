// The team's runs as a table (/app/runs, ?graph= for one graph): name, status, who, when, duration,
// graph revision, dataset, the configuration fields and graph parameters that differ among the
// listed runs, final and best metrics. The server filters (the list's filters and a `filter`
// expression), sorts (a header click sets `ordering`) and counts; the page shows PAGE_SIZE runs at
// a time (pages, not a virtualised list: a hundred rows scroll fine). Saved views keep a filter, an
// ordering and the columns; "Compare top N" opens the first N runs of the order; ticked runs open
// with Compare.
import { useEffect, useMemo, useState } from "react";
import { api, resultsOf } from "../api/client";
import type { GraphSummary } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { navigate } from "../router";
import { runsApi } from "./api";
import { filterFields } from "./filterCompletion";
import { NO_FILTERS, type RunFilters, pageCount, pageRange, runsQuery } from "./runsQuery";
import {
  COMPARE_MAX,
  COMPARE_MIN,
  DEFAULT_SORT,
  type Sort,
  canCompare,
  columnKeys,
  nextSort,
  orderingOf,
  selectedInOrder,
  shownColumns,
  sortOf,
  tableColumns,
} from "./runsTable";
import { CompareTop } from "./table/CompareTop";
import { FilterBox } from "./table/FilterBox";
import { RunsFilters } from "./table/RunsFilters";
import { RunsTable } from "./table/RunsTable";
import { SavedViews, type ViewState } from "./table/SavedViews";
import { useGraphParams } from "./table/useGraphParams";
import { useRunsList } from "./table/useRunsList";
import type { Dataset } from "./types";

/** How long typing pauses before the text boxes are sent. */
const TYPING_MS = 300;
const FILTER_TYPING_MS = 800;

export function RunsPage({ graphId }: { graphId: number | null }) {
  const { team, canEdit } = useSession();
  const [graphs, setGraphs] = useState<GraphSummary[]>([]);
  const [datasets, setDatasets] = useState<Dataset[]>([]);
  const [filters, setFilters] = useState<Omit<RunFilters, "graph">>(NO_FILTERS);
  // What is typed in the text, tag and filter boxes, sent once typing pauses (the filter on Enter too).
  const [typed, setTyped] = useState({ q: "", tag: "" });
  const [typedFilter, setTypedFilter] = useState("");
  const [sort, setSort] = useState<Sort>(DEFAULT_SORT);
  const [page, setPage] = useState(1);
  const [viewColumns, setViewColumns] = useState<string[]>([]);
  const [selected, setSelected] = useState<ReadonlySet<number>>(new Set());

  // A filter that really changes starts again at the first page.
  const change = (next: Partial<Omit<RunFilters, "graph">>) =>
    setFilters((f) => (Object.entries(next).every(([k, v]) => f[k as keyof typeof f] === v) ? f : { ...f, ...next }));
  useEffect(() => setPage(1), [filters, graphId]);
  useEffect(() => {
    const timer = window.setTimeout(() => change(typed), TYPING_MS);
    return () => window.clearTimeout(timer);
  }, [typed]);
  useEffect(() => {
    const timer = window.setTimeout(() => change({ filter: typedFilter }), FILTER_TYPING_MS);
    return () => window.clearTimeout(timer);
  }, [typedFilter]);

  const all = { ...filters, graph: graphId };
  const query = team ? runsQuery(team.id, all, sort, page) : null;
  const { runs, count, error, filterError } = useRunsList(query);

  useEffect(() => {
    if (!team) return;
    void filterChoices(team.id).then(([g, d]) => {
      setGraphs(g);
      setDatasets(d);
    });
  }, [team]);

  const graphParams = useGraphParams(runs);
  const columns = useMemo(() => shownColumns(tableColumns(runs ?? [], graphParams), viewColumns), [runs, graphParams, viewColumns]);
  const fields = useMemo(() => filterFields(runs ?? [], graphParams), [runs, graphParams]);
  const rows = runs ?? [];
  const chosen = selectedInOrder(rows, selected);
  const filtered = graphId !== null || Object.values(filters).some(Boolean);
  const pages = pageCount(count);

  function applyView(view: ViewState) {
    setTypedFilter(view.filter);
    change({ filter: view.filter });
    setSort(sortOf(view.ordering));
    setViewColumns(view.columns);
  }

  return (
    <div className="page">
      <TopBar />
      <main className="wide-page runs-page" data-testid="runs-page">
        <div className="panel-head">
          <h1>Runs{team ? ` of ${team.name}` : ""}</h1>
          <div className="row">
            {team && <CompareTop count={count} firstPage={page === 1 ? rows : null} queryFor={(n) => runsQuery(team.id, all, sort, 1, n)} />}
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
        </div>
        {team && (
          <SavedViews
            team={team.id}
            canEdit={canEdit}
            current={() => ({ filter: filters.filter.trim(), ordering: orderingOf(sort), columns: columnKeys(columns) })}
            onApply={applyView}
          />
        )}
        <RunsFilters
          filters={filters}
          typed={typed}
          graphId={graphId}
          graphs={graphs}
          datasets={datasets}
          onFilters={(f) => change(f)}
          onTyped={setTyped}
        />
        <FilterBox
          text={typedFilter}
          applied={filters.filter}
          fields={fields}
          error={filterError}
          onText={setTypedFilter}
          onApply={() => change({ filter: typedFilter })}
        />
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {runs === null && team && <p className="muted">Loading…</p>}
        {runs && (
          <p className="runs-count muted" aria-live="polite">
            <span data-testid="runs-count">{count === 1 ? "1 run" : `${count} runs`}</span>
            {pages > 1 && <span data-testid="runs-range"> · {pageRange(page, rows.length, count)}</span>}
            <span data-testid="runs-order">
              {" "}
              · by {sort.column}, {sort.direction === "asc" ? "ascending" : "descending"}
            </span>
          </p>
        )}
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
            onSort={(key) => {
              setSort(nextSort(sort, key));
              setPage(1);
            }}
            selected={selected}
            chosen={chosen}
            onSelect={setSelected}
            onTag={(t) => setTyped({ ...typed, tag: t })}
          />
        )}
        {pages > 1 && (
          <nav className="pager row" aria-label="Pages of runs">
            <button type="button" data-testid="runs-previous" disabled={page <= 1} onClick={() => setPage(page - 1)}>
              Previous
            </button>
            <span data-testid="runs-page-of">
              Page {page} of {pages}
            </span>
            <button type="button" data-testid="runs-next" disabled={page >= pages} onClick={() => setPage(page + 1)}>
              Next
            </button>
          </nav>
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
