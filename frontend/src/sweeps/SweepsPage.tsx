// The team's sweeps (/app/sweeps): name, status, progress, best value, strategy, created; the
// "New sweep" form for editors. Polled while a sweep runs.
import { useCallback, useEffect, useState } from "react";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { StatusBadge } from "../datasets/StatusBadge";
import { navigate } from "../router";
import { formatMetric } from "../runs/format";
import { sweepsApi } from "./api";
import { NewSweepForm } from "./NewSweepForm";
import { finishedTrials, strategyText } from "./sweepText";
import type { Sweep } from "./types";

const POLL_MS = 3000;

export default function SweepsPage() {
  const { team, canEdit } = useSession();
  const [sweeps, setSweeps] = useState<Sweep[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);

  const load = useCallback(async () => {
    if (!team) return;
    try {
      setSweeps(await sweepsApi.list(team.id));
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [team]);

  useEffect(() => {
    setSweeps(null);
    void load();
  }, [load]);

  const running = sweeps?.some((s) => s.status === "running") ?? false;
  useEffect(() => {
    if (!running) return;
    const id = window.setInterval(() => void load(), POLL_MS);
    return () => window.clearInterval(id);
  }, [running, load]);

  return (
    <div className="page">
      <TopBar />
      <main className="wide-page" data-testid="sweeps-page">
        <div className="panel-head">
          <h1>Sweeps{team ? ` of ${team.name}` : ""}</h1>
          {canEdit && !creating && (
            <button type="button" className="primary" data-testid="new-sweep" onClick={() => setCreating(true)}>
              New sweep
            </button>
          )}
        </div>
        {creating && team && <NewSweepForm team={team.id} onCancel={() => setCreating(false)} />}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {sweeps === null && team && !error && <p className="muted">Loading…</p>}
        {sweeps && sweeps.length === 0 && (
          <p className="muted" data-testid="no-sweeps">
            No sweeps yet. A sweep trains one graph many times over a search space and finds the best settings.
          </p>
        )}
        {sweeps && sweeps.length > 0 && (
          <table className="table" data-testid="sweep-list">
            <thead>
              <tr>
                <th>Sweep</th>
                <th>Status</th>
                <th>Progress</th>
                <th>Best</th>
                <th>Strategy</th>
                <th>Graph · dataset</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              {sweeps.map((s) => (
                <tr key={s.id} data-testid={`sweep-row-${s.id}`}>
                  <td>
                    <a
                      href={`${import.meta.env.BASE_URL}sweeps/${s.id}`}
                      data-testid="open-sweep"
                      onClick={(e) => {
                        e.preventDefault();
                        navigate(`/sweeps/${s.id}`);
                      }}
                    >
                      {s.name || `#${s.id}`}
                    </a>
                  </td>
                  <td>
                    <StatusBadge status={s.status} testid="sweep-status" />
                  </td>
                  <td className="sweep-progress-cell">
                    <progress max={1} value={s.progress.total ? finishedTrials(s) / s.progress.total : 0} aria-label={`Progress of sweep ${s.name}`} />{" "}
                    <span className="small">
                      {finishedTrials(s)} / {s.progress.total || s.budget}
                    </span>
                  </td>
                  <td className="small" data-testid="sweep-best-value">
                    {s.best ? `${s.objective.metric} ${formatMetric(s.best.value)} (trial ${s.best.number})` : "–"}
                  </td>
                  <td className="small">{strategyText(s)}</td>
                  <td className="small">
                    {s.graph_name} · {s.dataset_name}
                  </td>
                  <td className="small">
                    {s.created_by ?? ""} <span className="muted">{new Date(s.created_at).toLocaleString()}</span>
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
