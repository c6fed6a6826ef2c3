// The run page's stream state as a hook: the first REST read, the long-run history, the stream
// (RunStream: seq de-dup, ?since= resume) and the checkpoint list, folded by runStreamReducer.
import { type Dispatch, useCallback, useEffect, useMemo, useReducer, useRef } from "react";
import { ApiError } from "../api/client";
import { runsApi, streamUrl } from "./api";
import { initialRunStreamState, type RunStreamAction, runStreamReducer, type RunStreamState } from "./runStreamReducer";
import { SeriesSet } from "./series";
import { BATCH_QUERY, RunStream, type RunStreamOptions } from "./stream";
import type { ExplanationEvent, Run, RunEvent, RunExports } from "./types";

/** Up to this many stored events the stream replays everything (logs included); beyond, the
 * charts start from the downsampled REST series and the stream resumes after them. */
export const REPLAY_LIMIT = 5000;
const HISTORY_POINTS = 2000;

/** Runs `fn` once before the next paint; returns a cancel function. */
export type FrameScheduler = (fn: () => void) => () => void;

const animationFrame: FrameScheduler = (fn) => {
  const id = requestAnimationFrame(fn);
  return () => cancelAnimationFrame(id);
};

/**
 * Hands the stream's frames to the reducer. Many events can arrive in one burst (a replay): they
 * are dispatched as one batch per frame, not one render per event. Any other action first
 * dispatches the events received before it, so the reducer sees everything in arrival order.
 */
export class StreamDispatcher {
  private pending: RunEvent[] = [];
  private cancelFrame: (() => void) | null = null;
  readonly explanationListeners = new Set<(e: ExplanationEvent) => void>();

  constructor(
    private readonly dispatch: Dispatch<RunStreamAction>,
    readonly series: SeriesSet,
    private readonly frame: FrameScheduler = animationFrame,
  ) {}

  /** One event of the stream (already de-duplicated by RunStream). */
  event(e: RunEvent): void {
    if (e.type === "metric") this.series.addEvent(e);
    if (e.type === "explanation") for (const listener of this.explanationListeners) listener(e);
    this.pending.push(e);
    this.cancelFrame ??= this.frame(() => {
      this.cancelFrame = null;
      this.flush();
    });
  }

  /** Any other action, after the events received before it. */
  send(action: RunStreamAction): void {
    this.flush();
    this.dispatch(action);
  }

  /** Dispatches the events waiting for the next frame now. */
  flush(): void {
    this.cancelFrame?.();
    this.cancelFrame = null;
    if (!this.pending.length) return;
    const events = this.pending;
    this.pending = [];
    this.dispatch({ type: "events", events, seriesVersion: this.series.version });
  }

  /** Drops what is waiting (the page is gone). */
  stop(): void {
    this.cancelFrame?.();
    this.cancelFrame = null;
    this.pending = [];
  }

  /** The RunStream callbacks that feed this dispatcher. */
  streamCallbacks(): Pick<RunStreamOptions, "onEvent" | "onState" | "onConnection"> {
    return {
      onEvent: (e) => this.event(e),
      // Each (re)connect starts with the run as it is now: the one read that replaces polling.
      onState: (frame) => this.send({ type: "state", run: frame.run }),
      onConnection: (state, detail) => this.send({ type: "connection", state, detail }),
    };
  }
}

export interface RunStreamHandle {
  state: RunStreamState;
  series: SeriesSet;
  /** The run changed by the page's own request (cancel). */
  setRun: (run: Run) => void;
  /** The downloads as the export request answered them. */
  setExports: (exports: RunExports) => void;
  setError: (message: string) => void;
  /** Listens to explanation events; returns the unsubscribe function. */
  subscribeExplanations: (listener: (e: ExplanationEvent) => void) => () => void;
}

export function useRunStream(runId: number): RunStreamHandle {
  const [state, dispatch] = useReducer(runStreamReducer, initialRunStreamState);
  const series = useMemo(() => new SeriesSet(), [runId]);
  const dispatcher = useMemo(() => new StreamDispatcher(dispatch, series), [series]);

  useEffect(() => {
    let stream: RunStream | null = null;
    let cancelled = false;
    (async () => {
      try {
        const first = await runsApi.run(runId);
        if (cancelled) return;
        dispatcher.send({ type: "loaded", run: first });
        let since = 0;
        if (first.last_seq > REPLAY_LIMIT) {
          const history = await runsApi.metrics(runId, HISTORY_POINTS);
          if (cancelled) return;
          series.addRest(history.series);
          since = history.last_seq;
          dispatcher.send({ type: "history", seriesVersion: series.version });
        }
        // Batch frames: one frame per live message (and per replayed chunk), not one per event.
        stream = new RunStream({ url: (s) => streamUrl(runId, s) + BATCH_QUERY, since, ...dispatcher.streamCallbacks() });
        stream.start();
      } catch (e) {
        if (!cancelled)
          dispatcher.send({
            type: "failed",
            message: e instanceof ApiError && e.status === 404 ? "This run does not exist or is not shared with your team." : (e as Error).message,
          });
      }
    })();
    return () => {
      cancelled = true;
      stream?.stop();
      dispatcher.stop();
    };
  }, [runId, series, dispatcher]);

  // Every read that was asked for is applied (a newer request does not cancel an older one, so a
  // burst of checkpoint events still updates the list), until the page shows another run.
  const shown = useRef(dispatcher);
  shown.current = dispatcher;
  const wanted = state.checkpointsWanted;
  useEffect(() => {
    runsApi.checkpoints(runId).then(
      (checkpoints) => {
        if (shown.current === dispatcher) dispatcher.send({ type: "checkpoints", checkpoints });
      },
      () => undefined,
    );
  }, [runId, wanted, dispatcher]);

  const setRun = useCallback((run: Run) => dispatcher.send({ type: "run", run }), [dispatcher]);
  const setExports = useCallback((exports: RunExports) => dispatcher.send({ type: "exports", exports }), [dispatcher]);
  const setError = useCallback((message: string) => dispatcher.send({ type: "failed", message }), [dispatcher]);
  const subscribeExplanations = useCallback(
    (listener: (e: ExplanationEvent) => void) => {
      dispatcher.explanationListeners.add(listener);
      return () => {
        dispatcher.explanationListeners.delete(listener);
      };
    },
    [dispatcher],
  );
  return { state, series, setRun, setExports, setError, subscribeExplanations };
}
