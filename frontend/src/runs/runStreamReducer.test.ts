// Frames in, state out: the stream client, the dispatcher and the reducer together, on a fake socket.
import { describe, expect, it } from "vitest";
import { initialRunStreamState, MAX_LOG_LINES, type RunStreamAction, runStreamReducer, type RunStreamState } from "./runStreamReducer";
import { SeriesSet } from "./series";
import { RunStream, type SocketLike } from "./stream";
import type { Run, RunEvent, RunExports, RunProgress } from "./types";
import { StreamDispatcher } from "./useRunStream";

class FakeSocket implements SocketLike {
  onopen: SocketLike["onopen"] = null;
  onmessage: SocketLike["onmessage"] = null;
  onclose: SocketLike["onclose"] = null;
  onerror: SocketLike["onerror"] = null;
  constructor(readonly url: string) {}
  send(frame: object): void {
    this.onmessage?.({ data: JSON.stringify(frame) });
  }
  drop(code = 1006): void {
    this.onclose?.({ code });
  }
  close(): void {}
}

const exports: RunExports = { status: "none", safetensors: false, python: false, config: false, zip: false, onnx: false, note: "" };
const progress = (step: number, total: number | null = 100): RunProgress => ({
  epoch: step / 10, step, total_steps: total, fraction: total ? step / total : null, eta_seconds: total ? total - step : null,
});

function run(overrides: Partial<Run> = {}): Run {
  return {
    id: 7, team: 1, name: "", notes: "", tags: [], init: {}, origin: {}, duration_s: null, best_checkpoint: null,
    summary: { final: {}, best: {} }, graph: 2, graph_name: "mlp", graph_revision: 3, revision: 1, dataset: 4, dataset_name: "iris", dataset_version: null,
    config: { epochs: 10 }, recipe: {}, status: "running", progress: progress(0, null), latest_metrics: {}, final_metrics: {},
    error: "", cancel_requested: false, attempts: 1, max_attempts: 3, worker: "w1", heartbeat_at: null, created_by: "ada",
    created_at: "", started_at: null, finished_at: null, last_seq: 0, stream: "/ws/runs/7/", exports,
    need: { kind: "cpu", devices: 1 }, priority: 0, queue: null, graph_params: null, device: "cpu", reproduces: null, code_version: {},
    ...overrides,
  };
}

const metric = (seq: number, step: number, loss: number, p?: RunProgress): RunEvent => ({
  type: "metric", run: 7, seq, step, epoch: step / 10, values: { "train/loss": loss }, ...(p ? { progress: p } : {}),
});

/** A page without React: RunStream -> StreamDispatcher -> reducer, with a manual frame clock. */
function page() {
  let state: RunStreamState = initialRunStreamState;
  const dispatch = (action: RunStreamAction) => {
    state = runStreamReducer(state, action);
  };
  const frames: (() => void)[] = [];
  const series = new SeriesSet();
  const dispatcher = new StreamDispatcher(dispatch, series, (fn) => {
    frames.push(fn);
    return () => frames.splice(frames.indexOf(fn), 1);
  });
  const sockets: FakeSocket[] = [];
  const retries: (() => void)[] = [];
  const stream = new RunStream({
    url: (since) => `ws://x/ws/runs/7/?since=${since}`,
    connect: (url) => {
      const socket = new FakeSocket(url);
      sockets.push(socket);
      return socket;
    },
    schedule: (fn) => {
      retries.push(fn);
      return () => undefined;
    },
    ...dispatcher.streamCallbacks(),
  });
  dispatch({ type: "loaded", run: run({ status: "queued" }) });
  stream.start();
  return {
    get state() {
      return state;
    },
    series,
    sockets,
    socket: () => sockets[sockets.length - 1],
    paint: () => frames.splice(0).forEach((fn) => fn()),
    frames,
    reconnect: () => retries.shift()!(),
  };
}

describe("the run page's stream state", () => {
  it("takes the run from the state frame of the connection", () => {
    const p = page();
    expect(p.state.run?.status).toBe("queued");
    expect(p.state.connection.state).toBe("connecting");
    p.socket().send({ type: "state", run: run({ status: "running", last_seq: 4 }), seq: 4 });
    expect(p.state.run?.status).toBe("running");
    expect(p.state.connection.state).toBe("replaying");
  });

  it("replays history without taking progress, downloads or final metrics from it", () => {
    const p = page();
    p.socket().send({ type: "state", run: run({ status: "succeeded", progress: progress(100), exports: { ...exports, status: "ready" } }), seq: 3 });
    p.socket().send(metric(1, 10, 1.0, progress(10)));
    p.socket().send({ type: "status", run: 7, seq: 2, status: "running", detail: "training on w1", progress: progress(0) });
    p.socket().send({ type: "status", run: 7, seq: 3, status: "succeeded", detail: "training finished", final_metrics: { "val/accuracy": 0.5 }, exports });
    expect(p.frames.length).toBe(1); // one batch per frame, not one render per event
    p.socket().send({ type: "replayed", seq: 3 });
    const s = p.state;
    expect(s.connection.state).toBe("live");
    expect(s.run?.status).toBe("succeeded");
    expect(s.run?.progress.step).toBe(100);
    expect(s.run?.final_metrics).toEqual({});
    expect(s.run?.exports.status).toBe("ready");
    expect(s.logs.map((l) => l.message)).toEqual(["running: training on w1", "succeeded: training finished"]);
    expect(p.series.count("train/loss")).toBe(1);
    expect(s.seriesVersion).toBe(p.series.version);
  });

  it("follows live metrics: points, the newest step and the worker's progress", () => {
    const p = page();
    p.socket().send({ type: "state", run: run(), seq: 0 });
    p.socket().send({ type: "replayed", seq: 0 });
    p.socket().send(metric(1, 10, 1.0, progress(10)));
    p.socket().send(metric(2, 20, 0.8, progress(20)));
    expect(p.state.live).toBeNull(); // drawn on the next frame
    p.paint();
    expect(p.state.live).toEqual({ step: 20, epoch: 2 });
    expect(p.state.run?.progress).toEqual(progress(20));
    expect(p.series.get("train/loss")?.values).toEqual([1.0, 0.8]);
    expect(p.state.seriesVersion).toBe(p.series.version);
  });

  it("ends with the live final status: final metrics, downloads, error, and a checkpoint re-read", () => {
    const p = page();
    p.socket().send({ type: "state", run: run(), seq: 0 });
    p.socket().send({ type: "replayed", seq: 0 });
    const wanted = p.state.checkpointsWanted;
    p.socket().send({ type: "checkpoint", run: 7, seq: 1, step: 50, epoch: 5, name: "epoch-0005" });
    p.socket().send(metric(2, 60, 0.5, progress(60)));
    p.socket().send({
      type: "status", run: 7, seq: 3, status: "succeeded", detail: "training finished", progress: progress(100),
      final_metrics: { "val/accuracy": 0.9 }, exports: { ...exports, status: "pending", safetensors: true },
    });
    p.socket().send({ type: "export", run: 7, seq: 4, status: "ready", exports: { ...exports, status: "ready", onnx: true } });
    p.paint();
    const s = p.state;
    expect(s.run?.status).toBe("succeeded");
    expect(s.run?.progress.step).toBe(100); // the status's progress is newer than the metric's
    expect(s.run?.final_metrics).toEqual({ "val/accuracy": 0.9 });
    expect(s.run?.exports.onnx).toBe(true);
    expect(s.checkpointsWanted).toBe(wanted + 2);
    expect(s.logs.map((l) => [l.seq, l.level, l.message])).toEqual([
      [1, "info", "checkpoint epoch-0005 at step 50"],
      [3, "status", "succeeded: training finished"],
    ]);
  });

  it("shows an epoch kept also as best on one line", () => {
    const p = page();
    p.socket().send({ type: "state", run: run(), seq: 0 });
    p.socket().send({ type: "checkpoint", run: 7, seq: 1, step: 10, epoch: 1, name: "best" });
    p.paint(); // the epoch's checkpoint may come in the next batch
    p.socket().send({ type: "checkpoint", run: 7, seq: 2, step: 10, epoch: 1, name: "epoch-0001" });
    p.socket().send({ type: "checkpoint", run: 7, seq: 3, step: 20, epoch: 2, name: "epoch-0002" });
    p.socket().send({ type: "replayed", seq: 3 });
    p.paint();
    expect(p.state.logs.map((l) => [l.seq, l.message])).toEqual([
      [1, "checkpoint epoch-0001 at step 10 (also kept as best)"],
      [3, "checkpoint epoch-0002 at step 20"],
    ]);
  });

  it("shows a failed run's error and keeps only the last log lines", () => {
    const p = page();
    p.socket().send({ type: "state", run: run(), seq: 0 });
    p.socket().send({ type: "replayed", seq: 0 });
    for (let seq = 1; seq <= MAX_LOG_LINES + 5; seq++) p.socket().send({ type: "log", run: 7, seq, level: "info", message: `line ${seq}` });
    p.socket().send({ type: "status", run: 7, seq: MAX_LOG_LINES + 6, status: "failed", detail: "training failed", error: "loss is NaN" });
    p.paint();
    expect(p.state.run?.error).toBe("loss is NaN");
    expect(p.state.logs.length).toBe(MAX_LOG_LINES);
    expect(p.state.logs.at(-1)).toMatchObject({ level: "error", message: "failed: training failed — loss is NaN" });
  });

  it("takes a gap in the seqs as it comes and drops what it has seen", () => {
    const p = page();
    p.socket().send({ type: "state", run: run(), seq: 0 });
    p.socket().send({ type: "replayed", seq: 0 });
    p.socket().send(metric(1, 10, 1.0));
    p.socket().send(metric(5, 10, 0.7)); // a redone step moved its points to a new seq
    p.socket().send(metric(5, 10, 0.7)); // resent
    p.socket().send(metric(3, 30, 9.9)); // older than the last delivered
    p.paint();
    expect(p.series.get("train/loss")).toEqual({ steps: [10], epochs: [1], values: [0.7] });
    expect(p.state.live).toEqual({ step: 10, epoch: 1 });
  });

  it("reconnects after a drop, resumes after the last seq and takes the run from the new state frame", () => {
    const p = page();
    p.socket().send({ type: "state", run: run(), seq: 0 });
    p.socket().send({ type: "replayed", seq: 0 });
    p.socket().send(metric(1, 10, 1.0, progress(10)));
    p.socket().drop();
    // The event received before the drop is applied before the connection changes.
    expect(p.state.live).toEqual({ step: 10, epoch: 1 });
    expect(p.state.connection.state).toBe("reconnecting");
    p.reconnect();
    expect(p.socket().url).toBe("ws://x/ws/runs/7/?since=1");
    p.socket().send({ type: "state", run: run({ status: "cancelled", cancel_requested: true, progress: progress(12) }), seq: 2 });
    p.socket().send({ type: "status", run: 7, seq: 2, status: "cancelled", detail: "cancelled at step 12", step: 12, cancel_observed_step: 12 });
    p.socket().send({ type: "replayed", seq: 2 });
    expect(p.state.connection.state).toBe("live");
    expect(p.state.run?.status).toBe("cancelled");
    expect(p.state.run?.progress.step).toBe(12);
    expect(p.state.logs.map((l) => l.message)).toEqual(["cancelled: cancelled at step 12"]);
  });

  it("takes the page's own answers: a cancel, the downloads, an error", () => {
    let state = runStreamReducer(initialRunStreamState, { type: "exports", exports });
    expect(state.run).toBeNull();
    state = runStreamReducer(state, { type: "run", run: run({ cancel_requested: true }) });
    state = runStreamReducer(state, { type: "exports", exports: { ...exports, onnx: "pending" } });
    state = runStreamReducer(state, { type: "failed", message: "network down" });
    expect(state.run?.cancel_requested).toBe(true);
    expect(state.run?.exports.onnx).toBe("pending");
    expect(state.error).toBe("network down");
  });
});
