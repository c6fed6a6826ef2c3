// One run: status, live progress and charts from the stream, logs, cancel, final metrics,
// checkpoints, downloads and explanations.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { ApiError, apiRequest } from "../api/client";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { StatusBadge } from "../datasets/StatusBadge";
import { navigate } from "../router";
import { exportUrl, runsApi, streamUrl } from "./api";
import { ExplainPanel } from "./ExplainPanel";
import { formatDuration, formatMetric } from "./format";
import { MetricChart } from "./MetricChart";
import { SeriesSet, chartKeys } from "./series";
import { type ConnectionState, RunStream } from "./stream";
import {
  ACTIVE_STATUSES,
  type Checkpoint,
  type DatasetSummary,
  type ExplanationEvent,
  type LogEvent,
  type Run,
  type RunEvent,
  type RunExports,
  type RunProgress,
  type StatusEvent,
} from "./types";

/** Up to this many stored events the stream replays everything (logs included); beyond, the
 * charts start from the downsampled REST series and the stream resumes after them. */
export const REPLAY_LIMIT = 5000;
const HISTORY_POINTS = 2000;
const MAX_LOG_LINES = 500;

type LogLine = { seq: number; level: string; message: string; step?: number };

/** "1 earlier checkpoint was pruned" / "59 earlier checkpoints were pruned". */
function prunedLine(n: number): string {
  return n === 1 ? "1 earlier checkpoint was pruned" : `${n} earlier checkpoints were pruned`;
}

function statusLine(e: StatusEvent): LogLine {
  const extra = e.error && e.error !== e.detail ? ` — ${e.error}` : "";
  return { seq: e.seq, level: e.status === "failed" ? "error" : "status", message: `${e.status}: ${e.detail ?? ""}${extra}` };
}

function ConfusionMatrix({ name, matrix, classes }: { name: string; matrix: number[][]; classes?: string[] }) {
  const label = (i: number) => classes?.[i] ?? String(i);
  const max = Math.max(1, ...matrix.flat());
  return (
    <table className="table small confusion" data-testid={`confusion-${name}`} aria-label={`Confusion matrix (${name}): rows are true classes, columns predicted`}>
      <caption>
        {name} confusion (rows: true, columns: predicted)
      </caption>
      <thead>
        <tr>
          <th scope="col" aria-label="true class" />
          {matrix[0]?.map((_, j) => (
            <th key={j} scope="col">
              {label(j)}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {matrix.map((row, i) => (
          <tr key={i}>
            <th scope="row">{label(i)}</th>
            {row.map((n, j) => (
              <td key={j} className={i === j ? "diag" : undefined} style={{ background: `rgba(47,111,221,${(0.6 * n) / max})` }}>
                {n}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Downloads({ run, onExports }: { run: Run; onExports: (exports: RunExports) => void }) {
  const [asking, setAsking] = useState<string | null>(null);
  if (run.status !== "succeeded") return <p className="muted">Downloads are available once the run has succeeded.</p>;
  const exports = run.exports;
  const files = [
    { format: "safetensors", label: "Weights (.safetensors)" },
    { format: "python", label: "Model source (model.py)" },
    { format: "zip", label: "Everything (.zip)" },
    { format: "config", label: "Training config (.json)" },
  ] as const;

  // Nothing is making the ONNX file (an older run): asking for it queues the export once; the
  // stream's `export` event says when it is there.
  async function makeOnnx() {
    setAsking("asking…");
    try {
      await apiRequest<unknown>("GET", exportUrl(run.id, "onnx"));
      onExports({ ...exports, onnx: true });
      setAsking(null);
    } catch (e) {
      const answer = e instanceof ApiError ? (e.body.exports as RunExports | undefined) : undefined;
      if (answer) {
        onExports(answer);
        setAsking(null);
      } else setAsking((e as Error).message);
    }
  }

  return (
    <ul className="downloads plain" data-testid="downloads" data-onnx={String(exports.onnx)}>
      {files.map((f) => (
        <li key={f.format}>
          {exports[f.format] ? (
            <a href={exportUrl(run.id, f.format)} download data-testid={`download-${f.format}`}>
              {f.label}
            </a>
          ) : (
            <span className="muted">{f.label}: missing</span>
          )}
        </li>
      ))}
      <li>
        {exports.onnx === true ? (
          <a href={exportUrl(run.id, "onnx")} download data-testid="download-onnx">
            ONNX (.onnx)
          </a>
        ) : exports.onnx === false ? (
          <button type="button" className="link" data-testid="download-onnx-make" disabled={asking === "asking…"} onClick={() => void makeOnnx()}>
            Make the ONNX file{asking ? ` (${asking})` : ""}
          </button>
        ) : (
          <span className="muted" data-testid="download-onnx-note">
            ONNX: {exports.onnx === "pending" ? "being made…" : exports.note || "not available for this graph."}
          </span>
        )}
      </li>
    </ul>
  );
}

export default function RunPage({ runId }: { runId: number }) {
  const { canEdit } = useSession();
  const [run, setRun] = useState<Run | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [connection, setConnection] = useState<{ state: ConnectionState; detail?: string }>({ state: "connecting" });
  const series = useMemo(() => new SeriesSet(), []);
  const [version, setVersion] = useState(0);
  const [live, setLive] = useState<{ step: number; epoch: number } | null>(null);
  const [logs, setLogs] = useState<LogLine[]>([]);
  const [historyCut, setHistoryCut] = useState(false);
  const [checkpoints, setCheckpoints] = useState<Checkpoint[]>([]);
  const [summary, setSummary] = useState<DatasetSummary | null>(null);
  const [cancelling, setCancelling] = useState(false);
  const explanationListeners = useRef(new Set<(e: ExplanationEvent) => void>());
  // The log box follows new lines (like a terminal) unless the user scrolled up to read.
  const logBox = useRef<HTMLOListElement>(null);
  const logPinned = useRef(true);
  const hasRun = run !== null;
  useEffect(() => {
    const el = logBox.current;
    if (el && logPinned.current) el.scrollTop = el.scrollHeight;
  }, [logs, hasRun]);

  // Many events can arrive in one burst (a replay): draw once per frame, not once per event.
  const pendingFrame = useRef<number | null>(null);
  const pendingLive = useRef<{ step: number; epoch: number } | null>(null);
  const pendingLogs = useRef<LogLine[]>([]);
  const pendingProgress = useRef<RunProgress | null>(null);
  // True once the stream has replayed what was stored: only live events carry fresh progress and
  // downloads (the `state` frame of each (re)connect has the run as it is now).
  const streamLive = useRef(false);
  const flush = useCallback(() => {
    if (pendingFrame.current !== null) return;
    pendingFrame.current = requestAnimationFrame(() => {
      pendingFrame.current = null;
      setVersion(series.version);
      if (pendingLive.current) setLive(pendingLive.current);
      if (pendingProgress.current) {
        const progress = pendingProgress.current;
        pendingProgress.current = null;
        setRun((r) => (r ? { ...r, progress } : r));
      }
      if (pendingLogs.current.length) {
        const lines = pendingLogs.current;
        pendingLogs.current = [];
        setLogs((old) => [...old, ...lines].slice(-MAX_LOG_LINES));
      }
    });
  }, [series]);

  const refreshCheckpoints = useCallback(() => {
    runsApi.checkpoints(runId).then(setCheckpoints, () => undefined);
  }, [runId]);

  const onEvent = useCallback(
    (e: RunEvent) => {
      switch (e.type) {
        case "metric":
          series.addEvent(e);
          if (!pendingLive.current || e.step >= pendingLive.current.step) pendingLive.current = { step: e.step, epoch: e.epoch };
          // Total steps and the ETA ride on the worker's live metric events: no polling.
          if (streamLive.current && e.progress && (!pendingProgress.current || e.progress.step >= pendingProgress.current.step))
            pendingProgress.current = e.progress;
          break;
        case "status": {
          pendingLogs.current.push(statusLine(e));
          const fresh = streamLive.current;
          setRun((r) =>
            r
              ? {
                  ...r,
                  status: e.status,
                  ...(fresh && e.progress ? { progress: e.progress } : {}),
                  ...(fresh && e.final_metrics ? { final_metrics: e.final_metrics } : {}),
                  ...(fresh && e.exports ? { exports: e.exports } : {}),
                  ...(fresh && e.error ? { error: e.error } : {}),
                }
              : r,
          );
          if (fresh && e.progress) pendingProgress.current = null; // the status's progress is newer
          if (!ACTIVE_STATUSES.has(e.status)) refreshCheckpoints();
          break;
        }
        case "export":
          if (streamLive.current) setRun((r) => (r ? { ...r, exports: e.exports } : r));
          break;
        case "log":
          pendingLogs.current.push({ seq: e.seq, level: (e as LogEvent).level, message: e.message, step: e.step });
          break;
        case "checkpoint":
          pendingLogs.current.push({ seq: e.seq, level: "info", message: `checkpoint ${e.name} at step ${e.step}`, step: e.step });
          refreshCheckpoints();
          break;
        case "explanation":
          for (const listener of explanationListeners.current) listener(e);
          break;
      }
      flush();
    },
    [flush, refreshCheckpoints, series],
  );

  useEffect(() => {
    let stream: RunStream | null = null;
    let cancelled = false;
    (async () => {
      try {
        const first = await runsApi.run(runId);
        if (cancelled) return;
        setRun(first);
        let since = 0;
        if (first.last_seq > REPLAY_LIMIT) {
          const history = await runsApi.metrics(runId, HISTORY_POINTS);
          if (cancelled) return;
          series.addRest(history.series);
          since = history.last_seq;
          setHistoryCut(true);
          flush();
        }
        stream = new RunStream({
          url: (s) => streamUrl(runId, s),
          since,
          onEvent,
          // Each (re)connect starts with the run as it is now: the one read that replaces polling.
          onState: (frame) => setRun(frame.run),
          onConnection: (state, detail) => {
            streamLive.current = state === "live";
            setConnection({ state, detail });
          },
        });
        stream.start();
      } catch (e) {
        if (!cancelled) setError(e instanceof ApiError && e.status === 404 ? "This run does not exist or is not shared with your team." : (e as Error).message);
      }
    })();
    refreshCheckpoints();
    return () => {
      cancelled = true;
      stream?.stop();
      if (pendingFrame.current !== null) cancelAnimationFrame(pendingFrame.current);
      pendingFrame.current = null;
    };
  }, [runId, series, onEvent, flush, refreshCheckpoints]);

  const active = run ? ACTIVE_STATUSES.has(run.status) : false;
  const setExports = useCallback((exports: RunExports) => setRun((r) => (r ? { ...r, exports } : r)), []);

  const datasetId = run?.dataset;
  useEffect(() => {
    if (!datasetId) return;
    runsApi.dataset(datasetId).then((d) => setSummary(d.summary), () => undefined);
  }, [datasetId]);

  const subscribe = useCallback((listener: (e: ExplanationEvent) => void) => {
    explanationListeners.current.add(listener);
    return () => {
      explanationListeners.current.delete(listener);
    };
  }, []);

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
  const final = run.final_metrics as Record<string, unknown>;
  const scalarFinals = Object.entries(final).filter(([, v]) => typeof v === "number");
  const matrices = Object.entries(final).filter(([k, v]) => k.endsWith("confusion_matrix") && Array.isArray(v)) as [string, number[][]][];

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
        </span>
      </TopBar>
      <main className="run-page" data-testid="run-page" data-run-id={run.id}>
        <section className="run-head panel" aria-label="Status">
          <div className="row">
            <StatusBadge status={run.status} testid="run-status" />
            {run.cancel_requested && ACTIVE_STATUSES.has(run.status) && <span className="warn">cancel requested…</span>}
            <span className={`small conn conn-${connection.state}`} data-testid="stream-state" title={connection.detail}>
              {connection.state === "live" ? "● live" : connection.state === "replaying" ? "catching up…" : connection.state === "reconnecting" ? "reconnecting…" : connection.state === "denied" ? connection.detail : connection.state === "closed" ? "" : "connecting…"}
            </span>
            <span className="spacer" />
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
          {run.error && (
            <p className="error" role="alert" data-testid="run-error">
              {run.error}
            </p>
          )}
          {error && <p className="error">{error}</p>}
        </section>

        <div className="charts">
          <MetricChart title="Loss" name="loss" series={series} version={version} keys={keys.loss} />
          <MetricChart title={summary?.task === "regression" ? "Regression metrics" : "Accuracy"} name="quality" series={series} version={version} keys={keys.quality} />
        </div>

        <div className="run-columns">
          <section className="panel" aria-label="Log">
            <h2>Log</h2>
            {historyCut && <p className="muted small">Earlier lines of this long run are not shown; the charts show its whole history.</p>}
            <ol
              className="log"
              role="log"
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

          <section className="panel" aria-label="Results">
            <h2>Results</h2>
            {scalarFinals.length === 0 ? (
              <p className="muted">Final metrics appear when the run ends.</p>
            ) : (
              <table className="table small" data-testid="final-metrics">
                <tbody>
                  {scalarFinals.map(([k, v]) => (
                    <tr key={k}>
                      <th scope="row">{k}</th>
                      <td>{formatMetric(v)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {matrices.map(([k, m]) => (
              <ConfusionMatrix key={k} name={k.split("/")[0]} matrix={m} classes={summary?.classes} />
            ))}
            <h3>Checkpoints</h3>
            {checkpoints.length === 0 ? (
              <p className="muted">None yet.</p>
            ) : (
              <ul className="plain small" data-testid="checkpoints">
                {checkpoints
                  .filter((c) => c.available)
                  .map((c) => (
                    <li key={c.step + c.name}>
                      {c.name} · step {c.step} · epoch {c.epoch.toFixed(1)}
                    </li>
                  ))}
                {/* A long run prunes most of its checkpoints: one line says so instead of a long list. */}
                {checkpoints.some((c) => !c.available) && (
                  <li className="muted" data-testid="checkpoints-pruned">
                    {prunedLine(checkpoints.filter((c) => !c.available).length)}
                  </li>
                )}
              </ul>
            )}
            <h3>Downloads</h3>
            <Downloads run={run} onExports={setExports} />
          </section>

          <ExplainPanel run={run} canEdit={canEdit} summary={summary} subscribe={subscribe} />
        </div>
      </main>
    </div>
  );
}
