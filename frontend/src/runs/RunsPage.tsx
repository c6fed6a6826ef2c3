// The team's runs, newest first, with status and progress; filter by graph.
import { useCallback, useEffect, useState } from "react";
import { api, resultsOf } from "../api/client";
import type { GraphSummary } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { StatusBadge } from "../datasets/StatusBadge";
import { navigate } from "../router";
import { runsApi } from "./api";
import { formatMetric } from "./format";
import { ACTIVE_STATUSES, type Run } from "./types";

const POLL_MS = 3000;

function headline(run: Run): string {
  const m = { ...run.latest_metrics, ...(run.final_metrics as Record<string, unknown>) } as Record<string, unknown>;
  for (const key of ["test/accuracy", "val/accuracy", "test/r2", "val/r2", "val/loss", "train/loss"])
    if (typeof m[key] === "number") return `${key} ${formatMetric(m[key])}`;
  return "";
}

export function RunsPage({ graphId }: { graphId: number | null }) {
  const { team } = useSession();
  const [runs, setRuns] = useState<Run[] | null>(null);
  const [graphs, setGraphs] = useState<GraphSummary[]>([]);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(async () => {
    if (!team) return;
    try {
      setRuns(await runsApi.runs(team.id, graphId));
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [team, graphId]);

  useEffect(() => {
    setRuns(null);
    void load();
  }, [load]);

  useEffect(() => {
    if (!team) return;
    api.graphs(team.id).then((p) => setGraphs(resultsOf(p)), () => undefined);
  }, [team]);

  const active = runs?.some((r) => ACTIVE_STATUSES.has(r.status)) ?? false;
  useEffect(() => {
    if (!active) return;
    const id = window.setInterval(() => void load(), POLL_MS);
    return () => window.clearInterval(id);
  }, [active, load]);

  return (
    <div className="page">
      <TopBar />
      <main className="wide-page" data-testid="runs-page">
        <div className="panel-head">
          <h1>Runs{team ? ` of ${team.name}` : ""}</h1>
          <label className="row">
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
        </div>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {runs === null && team && <p className="muted">Loading…</p>}
        {runs && runs.length === 0 && (
          <p className="muted" data-testid="no-runs">
            No runs yet. Open a graph, save it, and press Train.
          </p>
        )}
        {runs && runs.length > 0 && (
          <table className="table" data-testid="run-list">
            <thead>
              <tr>
                <th>Run</th>
                <th>Graph</th>
                <th>Dataset</th>
                <th>Status</th>
                <th>Progress</th>
                <th>Metric</th>
                <th>Started by</th>
              </tr>
            </thead>
            <tbody>
              {runs.map((r) => (
                <tr key={r.id} data-testid={`run-row-${r.id}`}>
                  <td>
                    <a
                      href={`${import.meta.env.BASE_URL}runs/${r.id}`}
                      data-testid="open-run"
                      onClick={(e) => {
                        e.preventDefault();
                        navigate(`/runs/${r.id}`);
                      }}
                    >
                      #{r.id}
                    </a>
                  </td>
                  <td>
                    {r.graph_name} <span className="muted">rev {r.revision}</span>
                  </td>
                  <td>{r.dataset_name}</td>
                  <td>
                    <StatusBadge status={r.status} testid="run-status" />
                  </td>
                  <td>
                    <progress max={1} value={r.progress.fraction ?? (r.status === "succeeded" ? 1 : 0)} aria-label={`Progress of run ${r.id}`} />
                  </td>
                  <td className="small">{headline(r)}</td>
                  <td className="small">
                    {r.created_by ?? ""} <span className="muted">{new Date(r.created_at).toLocaleString()}</span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </main>
    </div>
  );
}
