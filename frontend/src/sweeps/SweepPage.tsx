// One sweep: progress (polled every 2 s while it runs), the best trial, the trials table, the
// parallel-coordinates plot and each parameter's relation to the objective; Cancel for editors.
import { type ReactNode, useCallback, useEffect, useState } from "react";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { StatusBadge } from "../datasets/StatusBadge";
import { navigate } from "../router";
import { formatMetric } from "../runs/format";
import { sweepsApi } from "./api";
import { drawnTrials } from "./parallel";
import { ParallelCoordinates, ParamScatters } from "./ParallelCoordinates";
import { finishedTrials, paramText, progressText, strategyText } from "./sweepText";
import type { Objective, SweepDetail } from "./types";

const POLL_MS = 2000;

function RunLink({ run, children }: { run: number | null; children?: ReactNode }) {
  if (run === null) return <span className="muted">–</span>;
  return (
    <a
      href={`${import.meta.env.BASE_URL}runs/${run}`}
      data-testid="trial-run"
      onClick={(e) => {
        e.preventDefault();
        navigate(`/runs/${run}`);
      }}
    >
      {children ?? `run #${run}`}
    </a>
  );
}

export default function SweepPage({ sweepId }: { sweepId: number }) {
  const { canEdit } = useSession();
  const [sweep, setSweep] = useState<SweepDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [cancelling, setCancelling] = useState(false);

  const load = useCallback(async () => {
    try {
      setSweep(await sweepsApi.get(sweepId));
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [sweepId]);

  useEffect(() => {
    void load();
  }, [load]);

  const running = sweep?.status === "running";
  useEffect(() => {
    if (!running) return;
    const id = window.setInterval(() => void load(), POLL_MS);
    return () => window.clearInterval(id);
  }, [running, load]);

  async function cancel() {
    if (!sweep || !window.confirm(`Cancel sweep "${sweep.name}" and its queued and running trials?`)) return;
    setCancelling(true);
    try {
      setSweep(await sweepsApi.cancel(sweep.id));
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setCancelling(false);
    }
  }

  if (!sweep)
    return (
      <div className="page">
        <TopBar />
        {error ? (
          <p className="error center" role="alert">
            {error}
          </p>
        ) : (
          <p className="muted center">Loading…</p>
        )}
      </div>
    );

  const trials = [...(sweep.trials ?? [])].sort((a, b) => a.number - b.number);
  const p = sweep.progress;
  const finished = finishedTrials(sweep);
  const fraction = sweep.status === "succeeded" ? 1 : p.total ? Math.min(1, finished / p.total) : 0;
  const keys = Object.keys(sweep.space);
  const objective: Objective = { metric: sweep.objective.metric ?? "val/loss", mode: sweep.objective.mode ?? "min" };

  return (
    <div className="page">
      <TopBar>
        <span className="graph-name">
          Sweep “{sweep.name}” ·{" "}
          <a
            href={`${import.meta.env.BASE_URL}graphs/${sweep.graph}`}
            onClick={(e) => {
              e.preventDefault();
              navigate(`/graphs/${sweep.graph}`);
            }}
          >
            {sweep.graph_name}
          </a>
          {sweep.revision ? ` rev ${sweep.revision}` : ""} on {sweep.dataset_name}
        </span>
      </TopBar>
      <main className="wide-page sweep-page" data-testid="sweep-page" data-sweep-id={sweep.id}>
        <section className="panel" aria-label="Progress">
          <div className="row">
            <StatusBadge status={sweep.status} testid="sweep-status" />
            <span className="small muted">
              {strategyText(sweep)} · objective {sweep.objective.metric} ({sweep.objective.mode}) · budget {sweep.budget} · {sweep.parallelism} at once
            </span>
            <span className="spacer" />
            <a
              className="toolbar-link"
              href={`${import.meta.env.BASE_URL}runs?sweep=${sweep.id}`}
              onClick={(e) => {
                e.preventDefault();
                const ids = trials.filter((t) => t.run !== null).map((t) => t.run).slice(0, 20);
                navigate(ids.length >= 2 ? `/compare?ids=${ids.join(",")}` : `/runs`);
              }}
              data-testid="sweep-compare"
            >
              Compare trials
            </a>
            {canEdit && running && (
              <button type="button" className="danger" data-testid="sweep-cancel" disabled={cancelling} onClick={() => void cancel()}>
                {cancelling ? "Cancelling…" : "Cancel sweep"}
              </button>
            )}
          </div>
          <div className="progress-row">
            <progress data-testid="sweep-progress" max={1} value={fraction} aria-label="Sweep progress" aria-valuetext={`${Math.round(fraction * 100)}%`} />
            <span data-testid="sweep-progress-text">{progressText(sweep)}</span>
          </div>
          {error && (
            <p className="error" role="alert">
              {error}
            </p>
          )}
        </section>

        <section className="panel" aria-label="Best trial" data-testid="sweep-best">
          <h2>Best trial</h2>
          {sweep.best ? (
            <p>
              Trial <b data-testid="best-number">{sweep.best.number}</b>: {sweep.objective.metric}{" "}
              <b data-testid="best-value">{formatMetric(sweep.best.value)}</b> with {paramText(sweep.best.params)} ·{" "}
              <RunLink run={sweep.best.run}>open its run</RunLink>
            </p>
          ) : (
            <p className="muted">No trial has finished yet.</p>
          )}
        </section>

        <section className="panel" aria-label="Parameters against the objective">
          <h2>Parameters against {sweep.objective.metric}</h2>
          {drawnTrials(trials).length === 0 ? (
            <p className="muted">The plot appears as trials finish.</p>
          ) : (
            <>
              <ParallelCoordinates space={sweep.space} trials={trials} objective={objective} bestNumber={sweep.best?.number ?? null} />
              <ParamScatters space={sweep.space} trials={trials} objective={objective} />
            </>
          )}
        </section>

        <section className="panel" aria-label="Trials">
          <h2>Trials</h2>
          <table className="table small" data-testid="trials">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">state</th>
                {keys.map((k) => (
                  <th key={k} scope="col">
                    {k.startsWith("nodes.") ? k.slice(6) : k}
                  </th>
                ))}
                <th scope="col">{sweep.objective.metric}</th>
                <th scope="col">run</th>
              </tr>
            </thead>
            <tbody>
              {trials.map((t) => (
                <tr key={t.number} data-testid={`trial-${t.number}`} data-state={t.state} className={t.number === sweep.best?.number ? "best" : undefined}>
                  <td>{t.number}</td>
                  <td>
                    <StatusBadge status={t.state} testid="trial-state" />
                    {t.reason && (
                      <span className="small muted" data-testid="trial-reason">
                        {" "}
                        {t.reason}
                      </span>
                    )}
                  </td>
                  {keys.map((k) => (
                    <td key={k}>{typeof t.params?.[k] === "number" ? formatMetric(t.params[k]) : String(t.params?.[k] ?? "–")}</td>
                  ))}
                  <td data-testid="trial-value">{formatMetric(t.value)}</td>
                  <td>
                    <RunLink run={t.run} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      </main>
    </div>
  );
}
