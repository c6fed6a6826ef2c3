// The team's runs as a table (/app/runs, ?graph= for one graph): name, status, who, when, duration,
// graph revision, dataset, the configuration fields that differ among the listed runs, final and
// best metrics. Click a header to sort (runsTable.ts); the filters are the list's query parameters
// (applied by the server); tick 2-20 runs and press Compare.
import { useCallback, useEffect, useMemo, useState } from "react";
import { api, apiRequest, resultsOf } from "../api/client";
import type { GraphSummary, Page } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { StatusBadge } from "../datasets/StatusBadge";
import { BASE, navigate } from "../router";
import { runsApi } from "./api";
import { formatDuration, formatMetric } from "./format";
import {
  COMPARE_MAX,
  COMPARE_MIN,
  type Column,
  DEFAULT_SORT,
  NO_FILTERS,
  type RunFilters,
  type RunRow,
  type Sort,
  canCompare,
  durationOf,
  finalValues,
  flattenConfig,
  formatConfigValue,
  nextSort,
  runName,
  runsQuery,
  selectedInOrder,
  sortRuns,
  tableColumns,
} from "./runsTable";
import { ACTIVE_STATUSES, type Dataset, type RunStatus } from "./types";

const POLL_MS = 3000;
const STATUSES: RunStatus[] = ["queued", "running", "succeeded", "failed", "cancelled", "interrupted", "pruned"];

function SortHeader({ column, sort, onSort, group }: { column: Column; sort: Sort; onSort: (id: string) => void; group?: string }) {
  const active = sort.column === column.id;
  return (
    <th scope="col" aria-sort={active ? (sort.direction === "asc" ? "ascending" : "descending") : "none"} className={group}>
      <button type="button" className="sort" data-testid={`sort-${column.id}`} onClick={() => onSort(column.id)}>
        {/* "test/accuracy" may break after the slash: a dozen metric columns fit the screen. */}
        {column.label.split("/").map((part, i) => (
          <span key={i}>
            {i > 0 && (
              <>
                /<wbr />
              </>
            )}
            {part}
          </span>
        ))}
        <span aria-hidden className="sort-mark">
          {active ? (sort.direction === "asc" ? " ▲" : " ▼") : ""}
        </span>
      </button>
    </th>
  );
}

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

  const columns = useMemo(() => tableColumns(runs ?? []), [runs]);
  const all = useMemo(() => [...columns.fixed, ...columns.config, ...columns.final, ...columns.best], [columns]);
  const rows = useMemo(() => sortRuns(runs ?? [], all.find((c) => c.id === sort.column), sort.direction), [runs, all, sort]);
  const flat = useMemo(() => new Map(rows.map((r) => [r.id, flattenConfig(r.config)])), [rows]);
  const chosen = selectedInOrder(rows, selected);
  const filtered = graphId !== null || Object.values(filters).some(Boolean);

  function toggle(id: number, on: boolean) {
    setSelected((s) => {
      const next = new Set(s);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });
  }

  const col = (id: string) => all.find((c) => c.id === id)!;

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
        <form className="runs-filters row" role="search" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
          <label>
            <span>Search</span>
            <input
              type="search"
              data-testid="runs-search"
              placeholder="name, notes, graph, dataset"
              value={typed.q}
              onChange={(e) => setTyped({ ...typed, q: e.target.value })}
            />
          </label>
          <label>
            <span>Status</span>
            <select data-testid="runs-status-filter" value={filters.status} onChange={(e) => setFilters({ ...filters, status: e.target.value as RunStatus | "" })}>
              <option value="">Any status</option>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
          <label>
            <span>Graph</span>
            <select
              aria-label="Filter by graph"
              data-testid="runs-graph-filter"
              value={graphId ?? ""}
              onChange={(e) => navigate(e.target.value ? `/runs?graph=${e.target.value}` : "/runs")}
            >
              <option value="">All graphs</option>
              {graphs.map((g) => (
                <option key={g.id} value={g.id}>
                  {g.name}
                </option>
              ))}
            </select>
          </label>
          <label>
            <span>Dataset</span>
            <select
              data-testid="runs-dataset-filter"
              value={filters.dataset ?? ""}
              onChange={(e) => setFilters({ ...filters, dataset: e.target.value ? Number(e.target.value) : null })}
            >
              <option value="">All datasets</option>
              {datasets.map((d) => (
                <option key={d.id} value={d.id}>
                  {d.name}
                </option>
              ))}
            </select>
          </label>
          <label>
            <span>Tag</span>
            <input type="text" data-testid="runs-tag-filter" size={10} value={typed.tag} onChange={(e) => setTyped({ ...typed, tag: e.target.value })} />
          </label>
        </form>
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
          <div className="scroll-x">
            <table className="table runs-table" data-testid="run-list">
              <caption className="sr-only">Runs; click a column header to sort by it</caption>
              <thead>
                {(columns.config.length > 0 || columns.final.length > 0 || columns.best.length > 0) && (
                  <tr className="col-groups">
                    <td colSpan={8} />
                    {columns.config.length > 0 && (
                      <th scope="colgroup" colSpan={columns.config.length} className="group-config">
                        Config (differs)
                      </th>
                    )}
                    {columns.final.length > 0 && (
                      <th scope="colgroup" colSpan={columns.final.length} className="group-metric">
                        Final
                      </th>
                    )}
                    {columns.best.length > 0 && (
                      <th scope="colgroup" colSpan={columns.best.length} className="group-metric">
                        Best
                      </th>
                    )}
                  </tr>
                )}
                <tr>
                  <th scope="col">
                    <input
                      type="checkbox"
                      aria-label="Select every listed run"
                      data-testid="select-all-runs"
                      checked={rows.length > 0 && chosen.length === rows.length}
                      onChange={(e) => setSelected(e.target.checked ? new Set(rows.map((r) => r.id)) : new Set())}
                    />
                  </th>
                  {["name", "status", "who", "when", "duration", "graph", "dataset"].map((id) => (
                    <SortHeader key={id} column={col(id)} sort={sort} onSort={(c) => setSort(nextSort(sort, c))} />
                  ))}
                  {columns.config.map((c) => (
                    <SortHeader key={c.id} column={c} sort={sort} onSort={(id) => setSort(nextSort(sort, id))} group="group-config" />
                  ))}
                  {[...columns.final, ...columns.best].map((c) => (
                    <SortHeader key={c.id} column={c} sort={sort} onSort={(id) => setSort(nextSort(sort, id))} group="num" />
                  ))}
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => {
                  const name = runName(r);
                  const final = finalValues(r);
                  return (
                    <tr key={r.id} data-testid={`run-row-${r.id}`} className={selected.has(r.id) ? "selected" : undefined}>
                      <td>
                        <input
                          type="checkbox"
                          data-testid={`select-run-${r.id}`}
                          aria-label={`Select ${name}`}
                          checked={selected.has(r.id)}
                          onChange={(e) => toggle(r.id, e.target.checked)}
                        />
                      </td>
                      <td className="run-name">
                        <a
                          href={`${BASE}/runs/${r.id}`}
                          data-testid="open-run"
                          onClick={(e) => {
                            e.preventDefault();
                            navigate(`/runs/${r.id}`);
                          }}
                        >
                          {name}
                        </a>
                        {r.name.trim() && <span className="muted small"> #{r.id}</span>}
                        {r.tags.length > 0 && (
                          <ul className="chips" aria-label="Tags">
                            {r.tags.map((t) => (
                              <li key={t} className="chip">
                                <button type="button" className="chip-filter" title={`Only runs tagged ${t}`} onClick={() => setTyped({ ...typed, tag: t })}>
                                  {t}
                                </button>
                              </li>
                            ))}
                          </ul>
                        )}
                      </td>
                      <td>
                        <StatusBadge status={r.status} testid="run-status" />
                        {ACTIVE_STATUSES.has(r.status) && (
                          <progress
                            className="row-progress"
                            max={1}
                            value={r.progress.fraction ?? 0}
                            aria-label={`Progress of ${name}`}
                          />
                        )}
                        {r.status === "pruned" && r.error && <div className="muted small">{r.error}</div>}
                      </td>
                      <td className="small">{r.created_by ?? ""}</td>
                      <td className="small nowrap" title={new Date(r.created_at).toLocaleString()}>
                        {new Date(r.created_at).toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" })}
                      </td>
                      <td className="small nowrap">{formatDuration(durationOf(r))}</td>
                      <td className="small">
                        {r.graph_name} <span className="muted">rev {r.revision}</span>
                      </td>
                      <td className="small">{r.dataset_name}</td>
                      {columns.config.map((c) => (
                        <td key={c.id} className="small group-config" data-testid={`cell-${c.id}`}>
                          {formatConfigValue(flat.get(r.id)?.[c.label])}
                        </td>
                      ))}
                      {columns.final.map((c) => (
                        <td key={c.id} className="small num">
                          {formatMetric(final[c.label])}
                        </td>
                      ))}
                      {columns.best.map((c) => {
                        const best = r.summary?.best?.[c.label];
                        return (
                          <td key={c.id} className="small num" title={best ? `step ${best.step}, epoch ${best.epoch}` : undefined}>
                            {formatMetric(best?.value)}
                          </td>
                        );
                      })}
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
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
