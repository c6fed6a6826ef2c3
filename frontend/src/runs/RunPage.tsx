// One run: status, live progress and charts from the stream, logs, cancel, final metrics,
// checkpoints, downloads and explanations.
import { useEffect, useMemo, useRef, useState } from "react";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { StatusBadge } from "../datasets/StatusBadge";
import { navigate } from "../router";
import { runsApi } from "./api";
import { CheckpointsPanel } from "./CheckpointsPanel";
import type { InitChoice } from "./initPlan";
import { TrainDialog } from "./train/TrainDialog";
import { EvaluationPanel } from "./EvaluationPanel";
import { ExplainPanel } from "./ExplainPanel";
import { PredictPanel, type UserInput } from "./PredictPanel";
import { formatDuration } from "./format";
import { MetricChart } from "./MetricChart";
import { chartKeys } from "./series";
import { ACTIVE_STATUSES, type DatasetSummary } from "./types";
import { useRunStream } from "./useRunStream";
import { RunMeta } from "./RunMeta";
import { ResultsPanel } from "./ResultsPanel";
import { RunPlacement } from "./RunPlacement";
import { RegisterVersion } from "../models/RegisterVersion";
import { versionLabel } from "../datasets/versions";
import { ReproduceButton } from "./lineage/Reproduce";

export default function RunPage({ runId }: { runId: number }) {
  const { canEdit } = useSession();
  const { state, series, setRun, setExports, setError, subscribeExplanations } = useRunStream(runId);
  const { run, error, connection, live, logs, historyCut, checkpoints, seriesVersion: version } = state;
  const [summary, setSummary] = useState<DatasetSummary | null>(null);
  const [cancelling, setCancelling] = useState(false);
  // "Run again" (init null) or a start from one of its checkpoints: the train dialog is open.
  const [again, setAgain] = useState<{ init: InitChoice | null } | null>(null);
  // The input the predict panel's answer is about, handed to the explain panel (a new nonce per
  // input), and how often "Explain this input" was pressed (each press explains it).
  const [explainInput, setExplainInput] = useState<(UserInput & { nonce: number }) | null>(null);
  const inputCount = useRef(0);
  const [explainAsked, setExplainAsked] = useState(0);
  // The log box follows new lines (like a terminal) unless the user scrolled up to read.
  const logBox = useRef<HTMLOListElement>(null);
  const logPinned = useRef(true);
  const hasRun = run !== null;
  useEffect(() => {
    const el = logBox.current;
    if (el && logPinned.current) el.scrollTop = el.scrollHeight;
  }, [logs, hasRun]);

  const active = run ? ACTIVE_STATUSES.has(run.status) : false;

  const datasetId = run?.dataset;
  useEffect(() => {
    if (!datasetId) return;
    runsApi.dataset(datasetId).then((d) => setSummary(d.summary), () => undefined);
  }, [datasetId]);

  async function cancel() {
    if (!run || !window.confirm(`Cancel run #${run.id}?`)) return;
    setCancelling(true);
    try {
      setRun(await runsApi.cancelRun(run.id));
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setCancelling(false);
    }
  }

  const keys = useMemo(() => chartKeys(series.keys()), [series, version]);

  if (error && !run)
    return (
      <div className="page">
        <TopBar />
        <p className="error center" role="alert">
          {error}
        </p>
      </div>
    );
  if (!run)
    return (
      <div className="page">
        <TopBar />
        <p className="muted center">Loading…</p>
      </div>
    );

  const epochs = typeof run.config.epochs === "number" ? run.config.epochs : null;
  const step = Math.max(run.progress.step, live?.step ?? 0);
  const epoch = Math.max(run.progress.epoch, live?.epoch ?? 0);
  const total = run.progress.total_steps;
  const fraction = run.status === "succeeded" ? 1 : total ? Math.min(1, step / total) : run.progress.fraction ?? 0;

  return (
    <div className="page">
      <TopBar>
        <span className="graph-name">
          Run #{run.id} ·{" "}
          <a
            href={`${import.meta.env.BASE_URL}graphs/${run.graph}`}
            onClick={(e) => {
              e.preventDefault();
              navigate(`/graphs/${run.graph}`);
            }}
          >
            {run.graph_name}
          </a>{" "}
          rev {run.revision} on {run.dataset_name}
          {run.dataset_version && (
            <code data-testid="run-dataset-version" title={`sha256 ${run.dataset_version.digest}`}>
              {" "}
              {versionLabel(run.dataset_version)}
            </code>
          )}
        </span>
      </TopBar>
      <main className="run-page" data-testid="run-page" data-run-id={run.id}>
        <section className="run-head panel" aria-label="Status">
          <RunMeta run={run} canEdit={canEdit} onRun={setRun} />
          <div className="row">
            <StatusBadge status={run.status} testid="run-status" />
            {run.cancel_requested && ACTIVE_STATUSES.has(run.status) && <span className="warn">cancel requested…</span>}
            <span className={`small conn conn-${connection.state}`} data-testid="stream-state" title={connection.detail}>
              {connection.state === "live" ? (active ? "● live" : "") : connection.state === "replaying" ? "catching up…" : connection.state === "reconnecting" ? "reconnecting…" : connection.state === "denied" ? connection.detail : connection.state === "closed" ? "" : "connecting…"}
            </span>
            <span className="spacer" />
            {canEdit && (
              <button type="button" data-testid="run-again" title="Open the train dialog with this run's graph, dataset, config and split" onClick={() => setAgain({ init: null })}>
                Run again
              </button>
            )}
            <a
              href={`${import.meta.env.BASE_URL}runs/${run.id}/lineage`}
              data-testid="run-lineage"
              title="Where this run came from and what came of it"
              onClick={(e) => {
                e.preventDefault();
                navigate(`/runs/${run.id}/lineage`);
              }}
            >
              Lineage
            </a>
            {canEdit && run.dataset !== null && <ReproduceButton run={run} />}
            {canEdit && active && (
              <button type="button" className="danger" data-testid="run-cancel" disabled={cancelling || run.cancel_requested} onClick={() => void cancel()}>
                {run.cancel_requested ? "Cancelling…" : "Cancel run"}
              </button>
            )}
          </div>
          <div className="progress-row">
            <progress
              data-testid="run-progress"
              data-step={step}
              data-total={total ?? ""}
              max={1}
              value={fraction}
              aria-label="Training progress"
              aria-valuetext={`${Math.round(fraction * 100)}%`}
            />
            <span data-testid="run-progress-text">
              epoch {epoch.toFixed(1)}
              {epochs ? ` / ${epochs}` : ""} · step {step}
              {total ? ` / ${total}` : ""} · {Math.round(fraction * 100)}%
              {active && run.progress.eta_seconds !== null ? ` · about ${formatDuration(run.progress.eta_seconds)} left` : ""}
            </span>
          </div>
          <RunPlacement run={run} />
          {run.reproduces !== null && (
            <p className="small" data-testid="run-reproduces">
              Reproduces{" "}
              <a
                href={`${import.meta.env.BASE_URL}runs/${run.reproduces}`}
                onClick={(e) => {
                  e.preventDefault();
                  navigate(`/runs/${run.reproduces}`);
                }}
              >
                run #{run.reproduces}
              </a>
            </p>
          )}
          {run.error && (
            <p className="error" role="alert" data-testid="run-error">
              {run.error}
            </p>
          )}
          {error && <p className="error">{error}</p>}
        </section>

        <div className="charts">
          <MetricChart title="Loss" name="loss" series={series} version={version} keys={keys.loss} runId={runId} />
          <MetricChart title={summary?.task === "regression" ? "Regression metrics" : "Accuracy"} name="quality" series={series} version={version} keys={keys.quality} runId={runId} />
        </div>

        <div className="run-columns">
          <section className="panel" aria-label="Log">
            <h2>Log</h2>
            {historyCut && <p className="muted small">Earlier lines of this long run are not shown; the charts show its whole history.</p>}
            <ol
              className="log"
              aria-live="polite"
              aria-label="Run log"
              data-testid="run-log"
              ref={logBox}
              onScroll={(e) => {
                const el = e.currentTarget;
                logPinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
              }}
            >
              {logs.map((l) => (
                <li key={l.seq} className={`log-${l.level}`}>
                  {l.step !== undefined && <span className="muted">[{l.step}] </span>}
                  {l.message}
                </li>
              ))}
            </ol>
          </section>

          <ResultsPanel run={run} summary={summary} checkpoints={checkpoints} onExports={setExports} />
          {canEdit && run.status === "succeeded" && (
            <section className="panel" aria-label="Model registry">
              <h2>Model registry</h2>
              <RegisterVersion runId={run.id} team={run.team} checkpoints={checkpoints.filter((c) => c.available).map((c) => c.name)} />
            </section>
          )}

          <CheckpointsPanel run={run} checkpoints={checkpoints} canEdit={canEdit} onStartFrom={(init) => setAgain({ init })} />
          <EvaluationPanel run={run} summary={summary} canEdit={canEdit} checkpoints={checkpoints} />
          <PredictPanel
            run={run}
            summary={summary}
            canEdit={canEdit}
            onInput={(input) => setExplainInput(input ? { ...input, nonce: ++inputCount.current } : null)}
            onExplain={() => setExplainAsked((n) => n + 1)}
          />
          <ExplainPanel run={run} canEdit={canEdit} summary={summary} subscribe={subscribeExplanations} input={explainInput} explainNow={explainAsked} />
        </div>
      </main>
      {again && (
        <TrainDialog graphId={run.graph} revision={run.revision} from={run} init={again.init} onClose={() => setAgain(null)} />
      )}
    </div>
  );
}
