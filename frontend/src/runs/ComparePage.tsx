// Several runs side by side (/app/compare?ids=1,2,3): one chart per metric with every run's curve,
// the configuration fields that differ (and how the graph revisions differ), final metrics.
//
// One request (GET /api/runs/compare/) brings everything; the server downsamples every series to
// about one point per pixel of a chart, so 100 runs of 100,000 points stay a few thousand points
// each. The URL holds the runs and the view, so it reopens the same comparison.
import { useCallback, useDeferredValue, useEffect, useMemo, useState } from "react";
import { TopBar } from "../auth/TopBar";
import { StatusBadge } from "../datasets/StatusBadge";
import { BASE, navigate } from "../router";
import type { ChartView } from "./chartView";
import { CompareChart } from "./CompareChart";
import {
  type CompareAnswerJson,
  type CompareRunJson,
  type RunCurve,
  compareKeys,
  compareLabel,
  compareQuery,
  finalRows,
  maxPointsFor,
  parseCompareQuery,
  runColor,
} from "./compare";
import { runsApi } from "./api";
import { formatMetric } from "./format";
import { COMPARE_MAX, COMPARE_MIN, formatConfigValue } from "./runsTable";
import type { StepWindow } from "./series";
import { ACTIVE_STATUSES, type RunStatus } from "./types";

const POLL_MS = 5000;


/** Each run's curve of one metric, in the comparison's order. */
function curvesOf(runs: readonly CompareRunJson[], metric: string): RunCurve[] {
  return runs.map((r) => ({ run: r.id, label: compareLabel(r), series: r.series?.[metric] }));
}

function RunLink({ run, index }: { run: CompareRunJson; index: number }) {
  const id = run.id;
  return (
    <span className="run-chip">
      <span className="swatch" style={{ background: runColor(index) }} aria-hidden />
      <a
        href={`${BASE}/runs/${id}`}
        onClick={(e) => {
          e.preventDefault();
          navigate(`/runs/${id}`);
        }}
      >
        {compareLabel(run)}
      </a>
    </span>
  );
}

export default function ComparePage({ runIds }: { runIds: number[] }) {
  const ids = useMemo(() => runIds.slice(0, COMPARE_MAX), [runIds]);
  const [view, setView] = useState<ChartView>(() => parseCompareQuery(location.search).view);
  const [answer, setAnswer] = useState<CompareAnswerJson | null>(null);
  const [error, setError] = useState<string | null>(null);
  // About one point per pixel: charts sit two to a row on a wide screen.
  const maxPoints = useMemo(() => maxPointsFor(Math.min(window.innerWidth, 1400) / (window.innerWidth > 1100 ? 2 : 1)), []);
  const enough = ids.length >= COMPARE_MIN;
  // The controls answer at once; twenty runs' charts follow when React has time (a slider drag).
  const chartView = useDeferredValue(view);

  const load = useCallback(async () => {
    try {
      setAnswer(await runsApi.compare(ids, [], maxPoints));
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [ids, maxPoints]);

  useEffect(() => {
    if (enough) void load();
  }, [enough, load]);

  // Runs still training: their curves grow, so the comparison is read again now and then.
  const active = answer?.runs.some((r) => ACTIVE_STATUSES.has(r.status as RunStatus)) ?? false;
  useEffect(() => {
    if (!active) return;
    const timer = window.setInterval(() => void load(), POLL_MS);
    return () => window.clearInterval(timer);
  }, [active, load]);

  // The URL reopens the same comparison, view included (no new history entry per slider move).
  useEffect(() => {
    history.replaceState(null, "", `${BASE}/compare?${compareQuery({ ids, view })}`);
  }, [ids, view]);

  const fetchWindow = useCallback(
    async (metric: string, window: StepWindow, points: number) => {
      try {
        return curvesOf((await runsApi.compare(ids, [metric], points, window)).runs, metric);
      } catch {
        return null;
      }
    },
    [ids],
  );

  const runs = answer?.runs ?? [];
  const keys = useMemo(() => compareKeys(runs), [runs]);
  const curves = useMemo(() => new Map(keys.map((k) => [k, curvesOf(runs, k)])), [keys, runs]);
  const config = answer?.config_diff ?? [];
  const finals = useMemo(() => finalRows(runs), [runs]);
  const graphDiff = answer?.graph_diff ?? null;
  const nameOf = (id: number) => {
    const r = runs.find((x) => x.id === id);
    return r ? compareLabel(r) : `run ${id}`;
  };

  return (
    <div className="page">
      <TopBar />
      <main className="wide-page compare-page" data-testid="compare-page">
        <div className="panel-head">
          <h1>Comparing {ids.length} runs</h1>
          <a
            href={`${BASE}/runs`}
            onClick={(e) => {
              e.preventDefault();
              navigate("/runs");
            }}
          >
            Back to the runs
          </a>
        </div>
        {runIds.length > COMPARE_MAX && (
          <p className="warn">Only the first {COMPARE_MAX} of the {runIds.length} runs asked for are compared.</p>
        )}
        {!enough && (
          <p className="muted" data-testid="compare-too-few">
            Pick {COMPARE_MIN} to {COMPARE_MAX} runs in the runs table and press Compare.
          </p>
        )}
        {error && (
          <p className="error" role="alert" data-testid="compare-error">
            {error}
          </p>
        )}
        {enough && !answer && !error && <p className="muted">Loading…</p>}
        {answer && (
          <>
            <ul className="compare-runs plain" data-testid="compare-runs" aria-label="Compared runs">
              {runs.map((r, i) => (
                <li key={r.id} data-testid={`compare-run-${r.id}`}>
                  <RunLink run={r} index={i} />
                  {r.status && <StatusBadge status={r.status} />}
                  {r.graph_name && (
                    <span className="muted small">
                      {r.graph_name} rev {r.revision} · {r.dataset_name}
                    </span>
                  )}
                </li>
              ))}
            </ul>

            <div className="compare-view row" role="group" aria-label="Chart view">
              <label>
                x axis{" "}
                <select data-testid="compare-x" value={view.x} onChange={(e) => setView({ ...view, x: e.target.value as ChartView["x"] })}>
                  <option value="step">by step</option>
                  <option value="epoch">by epoch</option>
                </select>
              </label>
              <label>
                <input type="checkbox" data-testid="compare-log" checked={view.log} onChange={(e) => setView({ ...view, log: e.target.checked })} /> log y
              </label>
              <label title="Exponential moving average; the raw curves stay faint behind">
                smoothing{" "}
                <input
                  type="range"
                  data-testid="compare-smoothing"
                  min={0}
                  max={0.95}
                  step={0.05}
                  value={view.smoothing}
                  onChange={(e) => setView({ ...view, smoothing: Number(e.target.value) })}
                />{" "}
                <output>{view.smoothing.toFixed(2)}</output>
              </label>
              <span className="muted small">Drag over a chart to zoom (by step); double-click to go back.</span>
            </div>

            {keys.length === 0 ? (
              <p className="muted">These runs have no metrics yet.</p>
            ) : (
              <div className="charts compare-charts">
                {keys.map((k) => (
                  <CompareChart key={k} metric={k} curves={curves.get(k) ?? []} view={chartView} fetchWindow={fetchWindow} />
                ))}
              </div>
            )}

            <section className="panel" aria-label="Configuration">
              <h2>Configuration: what differs</h2>
              {config.length === 0 && !graphDiff ? (
                <p className="muted" data-testid="compare-config-same">
                  Every run has the same configuration.
                </p>
              ) : (
                <div className="scroll-x">
                  <table className="table small" data-testid="compare-config">
                    <thead>
                      <tr>
                        <th scope="col">Field</th>
                        {runs.map((r, i) => (
                          <th scope="col" key={r.id}>
                            <RunLink run={r} index={i} />
                          </th>
                        ))}
                      </tr>
                    </thead>
                    <tbody>
                      {config.map((row) => (
                        <tr key={row.field} data-testid={`config-row-${row.field}`}>
                          <th scope="row">{row.field}</th>
                          {runs.map((r) => (
                            <td key={r.id}>{formatConfigValue(row.values[String(r.id)])}</td>
                          ))}
                        </tr>
                      ))}
                      {graphDiff && (
                        <tr data-testid="config-row-graph">
                          <th scope="row">graph revision</th>
                          {runs.map((r) => (
                            <td key={r.id}>
                              {r.graph_name} rev {r.revision}
                            </td>
                          ))}
                        </tr>
                      )}
                    </tbody>
                  </table>
                </div>
              )}
              {graphDiff && (
                <div data-testid="compare-graph-diff">
                  <h3>Graph changes against {nameOf(runs[0].id)}'s revision</h3>
                  <ul className="plain small">
                    {graphDiff.map((d) => (
                      <li key={`${d.graph}-${d.revision}`}>
                        <strong>{d.runs.map(nameOf).join(", ")}</strong> (rev {d.revision}):{" "}
                        {d.changes.length ? d.changes.join("; ") : "another graph"}
                      </li>
                    ))}
                  </ul>
                </div>
              )}
            </section>

            <section className="panel" aria-label="Final metrics">
              <h2>Final metrics</h2>
              {finals.length === 0 ? (
                <p className="muted">Final metrics appear when the runs end.</p>
              ) : (
                <div className="scroll-x">
                  <table className="table small" data-testid="compare-finals">
                    <thead>
                      <tr>
                        <th scope="col">Metric</th>
                        {runs.map((r, i) => (
                          <th scope="col" key={r.id}>
                            <RunLink run={r} index={i} />
                          </th>
                        ))}
                      </tr>
                    </thead>
                    <tbody>
                      {finals.map((row) => (
                        <tr key={row.key}>
                          <th scope="row">{row.key}</th>
                          {row.values.map((v, i) => (
                            <td key={i} className={row.best.includes(i) ? "best" : undefined} title={row.best.includes(i) ? "best of these runs" : undefined}>
                              {formatMetric(v)}
                            </td>
                          ))}
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </section>
          </>
        )}
      </main>
    </div>
  );
}
