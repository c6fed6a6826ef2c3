// The runs table's filters: text search, status, graph (a route), dataset and tag.
import type { GraphSummary } from "../../api/types";
import { navigate } from "../../router";
import type { RunFilters } from "../runsQuery";
import type { Dataset, RunStatus } from "../types";

const STATUSES: RunStatus[] = ["queued", "running", "succeeded", "failed", "cancelled", "interrupted", "pruned"];

export interface Typed {
  q: string;
  tag: string;
}

export interface RunsFiltersProps {
  filters: Omit<RunFilters, "graph">;
  typed: Typed;
  graphId: number | null;
  graphs: GraphSummary[];
  datasets: Dataset[];
  onFilters: (f: Omit<RunFilters, "graph">) => void;
  onTyped: (t: Typed) => void;
}

export function RunsFilters({ filters, typed, graphId, graphs, datasets, onFilters, onTyped }: RunsFiltersProps) {
  const setFilters = onFilters;
  const setTyped = onTyped;
  return (
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
  );
}
