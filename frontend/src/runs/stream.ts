// The run stream client: keeps the last seq it saw, drops what it has seen, resumes with ?since=.
//
// Server frames (docs/subsystems/streams.md "The stream protocol"): {"type": "state", run, seq} first, then every
// stored event with seq > since, then {"type": "replayed", seq}, then live events. Stored seqs may
// have gaps (a redone step moves its points to a new seq), so a gap is not an error: an event is
// new exactly when its seq is above the last one delivered. A client that asks with `&batch=1`
// (BATCH_QUERY; the run page does) gets consecutive events together, {"type": "batch", events, seq}:
// one frame per live message instead of one per event. Each event in it is delivered as above.
import type { Schema } from "../api/types";
import type { RunEvent, StateFrame, StreamFrame } from "./types";

/** Several consecutive events in one frame (the server sends them to clients that ask). */
export type BatchFrame = Schema<"RunStreamBatchFrame">;

/** Appended to a stream URL (which has `?since=`): the server may send batch frames. */
export const BATCH_QUERY = "&batch=1";

/** The part of WebSocket the client uses (tests pass a fake). */
export interface SocketLike {
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason?: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  close(code?: number, reason?: string): void;
}

/** Where the connection is: replaying stored events, live, waiting to reconnect, or refused. */
export type ConnectionState = "connecting" | "replaying" | "live" | "reconnecting" | "denied" | "closed";

export const CLOSE_UNAUTHENTICATED = 4401;
export const CLOSE_NOT_FOUND = 4404;

export interface RunStreamOptions {
  /** The stream's URL for a given `since`. */
  url: (since: number) => string;
  /** The seq already seen (events up to it are not delivered again). */
  since?: number;
  onEvent: (event: RunEvent) => void;
  onState?: (frame: StateFrame) => void;
  onConnection?: (state: ConnectionState, detail?: string) => void;
  /** Opens a socket; default `new WebSocket(url)`. */
  connect?: (url: string) => SocketLike;
  /** Waits before reconnecting (ms), one per failed try in a row; the last repeats. */
  retryDelays?: number[];
  /** Runs `fn` after `ms`; returns a cancel function (tests pass a fake clock). */
  schedule?: (fn: () => void, ms: number) => () => void;
}

const DEFAULT_DELAYS = [500, 1000, 2000, 4000, 8000];

function defaultSchedule(fn: () => void, ms: number): () => void {
  const id = setTimeout(fn, ms);
  return () => clearTimeout(id);
}

/** Parses one frame; null for anything that is not a JSON object with a string `type`. */
export function parseFrame(data: unknown): StreamFrame | BatchFrame | null {
  if (typeof data !== "string") return null;
  try {
    const frame = JSON.parse(data) as unknown;
    if (frame && typeof frame === "object" && typeof (frame as { type?: unknown }).type === "string") return frame as StreamFrame | BatchFrame;
  } catch {
    return null;
  }
  return null;
}

/** One run's stream, reconnecting after drops and delivering every event once, in seq order. */
export class RunStream {
  private seq: number;
  private socket: SocketLike | null = null;
  private cancelRetry: (() => void) | null = null;
  private failures = 0;
  private stopped = false;
  private readonly opts: RunStreamOptions;

  constructor(opts: RunStreamOptions) {
    this.opts = opts;
    this.seq = opts.since ?? 0;
  }

  /** The highest seq delivered so far (what a reconnect asks to resume after). */
  get lastSeq(): number {
    return this.seq;
  }

  /** Opens the connection. */
  start(): void {
    this.stopped = false;
    this.open();
  }

  /** Closes for good: no more events, no reconnects. */
  stop(): void {
    this.stopped = true;
    this.cancelRetry?.();
    this.cancelRetry = null;
    const socket = this.socket;
    this.socket = null;
    if (socket) {
      socket.onclose = null;
      socket.onmessage = null;
      socket.close(1000, "page closed");
    }
    this.opts.onConnection?.("closed");
  }

  private open(): void {
    const connect = this.opts.connect ?? ((url: string) => new WebSocket(url) as unknown as SocketLike);
    this.opts.onConnection?.(this.failures ? "reconnecting" : "connecting");
    let socket: SocketLike;
    try {
      socket = connect(this.opts.url(this.seq));
    } catch (e) {
      this.retry(String(e));
      return;
    }
    this.socket = socket;
    socket.onmessage = (ev) => {
      if (this.socket !== socket || this.stopped) return;
      const frame = parseFrame(ev.data);
      if (frame) this.receive(frame);
    };
    socket.onerror = () => undefined; // a close always follows; it decides
    socket.onclose = (ev) => {
      if (this.socket !== socket) return;
      this.socket = null;
      if (this.stopped) return;
      if (ev.code === CLOSE_UNAUTHENTICATED || ev.code === CLOSE_NOT_FOUND) {
        this.stopped = true;
        this.opts.onConnection?.(
          "denied",
          ev.code === CLOSE_UNAUTHENTICATED ? "You are signed out." : "This run does not exist or is not shared with your team.",
        );
        return;
      }
      this.retry(ev.reason || `connection closed (${ev.code})`);
    };
  }

  private retry(detail: string): void {
    const delays = this.opts.retryDelays ?? DEFAULT_DELAYS;
    const delay = delays[Math.min(this.failures, delays.length - 1)];
    this.failures++;
    this.opts.onConnection?.("reconnecting", detail);
    const schedule = this.opts.schedule ?? defaultSchedule;
    this.cancelRetry = schedule(() => {
      this.cancelRetry = null;
      if (!this.stopped) this.open();
    }, delay);
  }

  /** Handles one frame (public for the page's tests; the socket calls it). */
  receive(frame: StreamFrame | BatchFrame): void {
    switch (frame.type) {
      case "batch":
        if (Array.isArray(frame.events)) for (const event of frame.events) this.deliver(event);
        return;
      case "state":
        this.opts.onState?.(frame);
        this.opts.onConnection?.("replaying");
        return;
      case "replayed":
        // Caught up: the connection works, so the next drop starts the back-off from the beginning.
        this.failures = 0;
        this.opts.onConnection?.("live");
        return;
      default:
        this.deliver(frame as RunEvent);
    }
  }

  private deliver(event: RunEvent): void {
    const seq = Number(event.seq);
    if (!Number.isFinite(seq) || seq <= this.seq) return; // seen already (replayed twice, or resent)
    this.seq = seq;
    this.opts.onEvent(event);
  }
}
