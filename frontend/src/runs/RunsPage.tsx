// The team's runs as a table (/app/runs, ?graph= for one graph): name, status, who, when, duration,
// graph revision, dataset, then the chosen columns (metrics final and best, config paths, graph
// parameters; by default those that differ among the loaded runs). The server filters (the list's
// filters and a `filter` expression), sorts (a header click sets `ordering`) and counts; the table
// is virtualised over every run of the filter and fetches pages of PAGE_SIZE as the view reaches
// them. Saved views keep a filter, an ordering and the columns; "Compare top N" opens the first N
// runs of the order; ticked runs open with Compare.
import { useEffect, useMemo, useState } from "react";
import { api, resultsOf } from "../api/client";
import type { GraphSummary } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { navigate } from "../router";
import { runsApi } from "./api";
import { filterFields, mergeFields } from "./filterCompletion";
import { fieldsOfColumns, pickerGroups } from "./runColumns";
import { NO_FILTERS, PAGE_SIZE, type RunFilters, runsQuery } from "./runsQuery";
import {
  COMPARE_MAX,
  COMPARE_MIN,
  DEFAULT_SORT,
  type Sort,
  canCompare,
  columnKeys,
  columnsOfKeys,
  graphParamsOf,
  nextSort,
  orderingOf,
  selectedInOrder,
  sortOf,
  tableColumns,
} from "./runsTable";
import { ColumnPicker } from "./table/ColumnPicker";
import { CompareTop } from "./table/CompareTop";
import { FilterBox } from "./table/FilterBox";
import { RunsFilters } from "./table/RunsFilters";
import { RunsTable } from "./table/RunsTable";
import { SavedViews, type ViewState } from "./table/SavedViews";
import { useRunColumns } from "./table/useRunColumns";
import { useRunPages } from "./table/useRunPages";
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
  const [viewColumns, setViewColumns] = useState<string[]>([]);
  const [selected, setSelected] = useState<ReadonlySet<number>>(new Set());

  // Only a filter that really changes makes a new query.
  const change = (next: Partial<Omit<RunFilters, "graph">>) =>
    setFilters((f) => (Object.entries(next).every(([k, v]) => f[k as keyof typeof f] === v) ? f : { ...f, ...next }));
  useEffect(() => {
    const timer = window.setTimeout(() => change(typed), TYPING_MS);
    return () => window.clearTimeout(timer);
  }, [typed]);
  useEffect(() => {
    const timer = window.setTimeout(() => change({ filter: typedFilter }), FILTER_TYPING_MS);
    return () => window.clearTimeout(timer);
  }, [typedFilter]);

  const all = { ...filters, graph: graphId };
  // Every page of this filter and order (the table adds &page=); graph parameters come with the runs.
  const query = team ? `${runsQuery(team.id, all, sort)}&fields=graph_params` : null;
  const { store, count, error, filterError, inView } = useRunPages(query);
  const names = useRunColumns(team?.id ?? null, filters.filter, graphId);

  useEffect(() => {
    if (!team) return;
    void filterChoices(team.id).then(([g, d]) => {
      setGraphs(g);
      setDatasets(d);
    });
  }, [team]);

  // The automatic columns: those that differ among the first page's runs.
  const version = store?.version ?? 0;
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const firstRows = useMemo(() => store?.leading(PAGE_SIZE) ?? [], [store, version]);
  const columns = useMemo(
    () => (viewColumns.length ? columnsOfKeys(viewColumns) : tableColumns(firstRows, graphParamsOf(firstRows))),
    [firstRows, viewColumns],
  );
  const fields = useMemo(() => mergeFields(fieldsOfColumns(names), filterFields(firstRows, graphParamsOf(firstRows))), [names, firstRows]);
  const chosen = selectedInOrder(store?.heldRows() ?? [], selected);
  const filtered = graphId !== null || Object.values(filters).some(Boolean);

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
            {team && <CompareTop count={count} leading={(n) => store?.leading(n) ?? []} queryFor={(n) => runsQuery(team.id, all, sort, 1, n)} />}
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
        {store === null && team && !error && !filterError && <p className="muted">Loading…</p>}
        {store && (
          <div className="runs-count-row row">
            <p className="runs-count muted" aria-live="polite">
              <span data-testid="runs-count">{count === 1 ? "1 run" : `${count} runs`}</span>
              <span data-testid="runs-order">
                {" "}
                · by {sort.column}, {sort.direction === "asc" ? "ascending" : "descending"}
              </span>
            </p>
            <ColumnPicker
              groups={pickerGroups(names)}
              shown={columnKeys(columns)}
              automatic={viewColumns.length === 0}
              onChange={setViewColumns}
              onAutomatic={() => setViewColumns([])}
            />
          </div>
        )}
        {store && count === 0 && (
          <p className="muted" data-testid="no-runs">
            {filtered ? "No runs match these filters." : "No runs yet. Open a graph, save it, and press Train."}
          </p>
        )}
        {store && count > 0 && (
          <RunsTable
            store={store}
            count={count}
            columns={columns}
            sort={sort}
            onSort={(key) => setSort(nextSort(sort, key))}
            selected={selected}
            onSelect={setSelected}
            onTag={(t) => setTyped({ ...typed, tag: t })}
            onView={inView}
            automatic={viewColumns.length === 0}
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
