// The run page's stream state in one reducer: what the REST reads and the stream's frames make of it.
//
// Pure: (state, action) -> state. The metric points themselves live in a SeriesSet (mutable, for
// speed: a replay may carry a hundred thousand points); actions carry its version so the charts know
// when to redraw. Events arrive in batches (one per animation frame, useRunStream.ts), in seq order,
// and every other action is dispatched only after the events received before it, so "fresh" below is
// the connection state at the time an event arrived.
import type { ConnectionState } from "./stream";
import { ACTIVE_STATUSES, type Checkpoint, type Run, type RunEvent, type RunExports, type RunProgress, type StatusEvent } from "./types";

export const MAX_LOG_LINES = 500;

export interface LogLine {
  seq: number;
  level: string;
  message: string;
  step?: number;
  /** The checkpoints this line names: an improving epoch is kept as `best` and `epoch-N`, one line. */
  checkpoints?: string[];
}

function checkpointLine(seq: number, step: number, names: string[]): LogLine {
  const [main, ...also] = [...names.filter((n) => n !== "best"), ...names.filter((n) => n === "best")];
  const extra = also.length ? ` (also kept as ${also.join(", ")})` : "";
  return { seq, level: "info", message: `checkpoint ${main} at step ${step}${extra}`, step, checkpoints: names };
}

export interface RunStreamState {
  /** The run as the last `state` frame (or REST read) had it, with what live events changed since. */
  run: Run | null;
  /** A REST read failed, or the page's last action did. */
  error: string | null;
  connection: { state: ConnectionState; detail?: string };
  /** The newest step (and its epoch) a metric event reported. */
  live: { step: number; epoch: number } | null;
  logs: LogLine[];
  /** A long run's charts start from the downsampled REST series: its early log lines are not shown. */
  historyCut: boolean;
  checkpoints: Checkpoint[];
  /** Goes up when the checkpoint list should be read again (a checkpoint event, a final status). */
  checkpointsWanted: number;
  /** SeriesSet.version at the last batch (the charts redraw when it changes). */
  seriesVersion: number;
}

export type RunStreamAction =
  | { type: "loaded"; run: Run }
  | { type: "failed"; message: string }
  | { type: "history"; seriesVersion: number }
  | { type: "connection"; state: ConnectionState; detail?: string }
  | { type: "state"; run: Run }
  | { type: "events"; events: RunEvent[]; seriesVersion: number }
  | { type: "checkpoints"; checkpoints: Checkpoint[] }
  | { type: "exports"; exports: RunExports }
  | { type: "run"; run: Run };

export const initialRunStreamState: RunStreamState = {
  run: null,
  error: null,
  connection: { state: "connecting" },
  live: null,
  logs: [],
  historyCut: false,
  checkpoints: [],
  checkpointsWanted: 1,
  seriesVersion: 0,
};

function statusLine(e: StatusEvent): LogLine {
  const extra = e.error && e.error !== e.detail ? ` — ${e.error}` : "";
  return { seq: e.seq, level: e.status === "failed" ? "error" : "status", message: `${e.status}: ${e.detail ?? ""}${extra}` };
}

/** Applies one batch of events, in seq order. */
function applyEvents(state: RunStreamState, events: RunEvent[], seriesVersion: number): RunStreamState {
  // Only live events carry fresh progress, final metrics and downloads: replayed ones are history
  // (the `state` frame of each (re)connect has the run as it is now).
  const fresh = state.connection.state === "live";
  let run = state.run;
  let live = state.live;
  let checkpointsWanted = state.checkpointsWanted;
  const lines: LogLine[] = [];
  let logs = state.logs;
  // Total steps and the ETA ride on the worker's live metric events (no polling); within a batch the
  // furthest one counts, and a later status's progress replaces it.
  let metricProgress: RunProgress | null = null;
  for (const e of events) {
    switch (e.type) {
      case "metric":
        if (!live || e.step >= live.step) live = { step: e.step, epoch: e.epoch };
        if (fresh && e.progress && run && (!metricProgress || e.progress.step >= metricProgress.step)) {
          metricProgress = e.progress;
          run = { ...run, progress: e.progress };
        }
        break;
      case "status":
        lines.push(statusLine(e));
        if (run)
          run = {
            ...run,
            status: e.status,
            ...(fresh && e.progress ? { progress: e.progress } : {}),
            ...(fresh && e.final_metrics ? { final_metrics: e.final_metrics } : {}),
            ...(fresh && e.exports ? { exports: e.exports } : {}),
            ...(fresh && e.error ? { error: e.error } : {}),
          };
        if (fresh && e.progress) metricProgress = null;
        if (!ACTIVE_STATUSES.has(e.status)) checkpointsWanted++;
        break;
      case "export":
        if (fresh && run) run = { ...run, exports: e.exports };
        break;
      case "log":
        lines.push({ seq: e.seq, level: e.level, message: e.message, step: e.step ?? undefined });
        break;
      case "checkpoint": {
        // The same step's other checkpoint (best, then epoch-N: the same weights kept twice) joins its line.
        const previous = lines.length ? lines[lines.length - 1] : logs[logs.length - 1];
        if (previous?.checkpoints && previous.step === e.step) {
          const merged = checkpointLine(previous.seq, e.step, [...previous.checkpoints, e.name]);
          if (lines.length) lines[lines.length - 1] = merged;
          else logs = [...logs.slice(0, -1), merged]; // its first half came in an earlier batch
        } else {
          lines.push(checkpointLine(e.seq, e.step, [e.name]));
        }
        checkpointsWanted++;
        break;
      }
      case "explanation":
        break; // the explain panel listens to these itself
    }
  }
  return {
    ...state,
    run,
    live,
    checkpointsWanted,
    seriesVersion,
    logs: lines.length ? [...logs, ...lines].slice(-MAX_LOG_LINES) : logs,
  };
}

export function runStreamReducer(state: RunStreamState, action: RunStreamAction): RunStreamState {
  switch (action.type) {
    case "loaded":
    case "state":
    case "run":
      return { ...state, run: action.run };
    case "failed":
      return { ...state, error: action.message };
    case "history":
      return { ...state, historyCut: true, seriesVersion: action.seriesVersion };
    case "connection":
      return { ...state, connection: { state: action.state, detail: action.detail } };
    case "events":
      return applyEvents(state, action.events, action.seriesVersion);
    case "checkpoints":
      return { ...state, checkpoints: action.checkpoints };
    case "exports":
      return state.run ? { ...state, run: { ...state.run, exports: action.exports } } : state;
  }
}
