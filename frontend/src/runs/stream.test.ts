import { describe, expect, it } from "vitest";
import { RunStream, type SocketLike, type ConnectionState } from "./stream";
import type { RunEvent } from "./types";

class FakeSocket implements SocketLike {
  onopen: SocketLike["onopen"] = null;
  onmessage: SocketLike["onmessage"] = null;
  onclose: SocketLike["onclose"] = null;
  onerror: SocketLike["onerror"] = null;
  closed = false;
  constructor(readonly url: string) {}
  send(frame: object): void {
    this.onmessage?.({ data: JSON.stringify(frame) });
  }
  drop(code = 1006): void {
    this.onclose?.({ code });
  }
  close(): void {
    this.closed = true;
  }
}

function harness(since = 0) {
  const sockets: FakeSocket[] = [];
  const events: RunEvent[] = [];
  const states: ConnectionState[] = [];
  const timers: (() => void)[] = [];
  const stream = new RunStream({
    url: (s) => `ws://x/ws/runs/7/?since=${s}`,
    since,
    connect: (url) => {
      const s = new FakeSocket(url);
      sockets.push(s);
      return s;
    },
    onEvent: (e) => events.push(e),
    onConnection: (s) => states.push(s),
    schedule: (fn) => {
      timers.push(fn);
      return () => undefined;
    },
  });
  return { stream, sockets, events, states, timers, fire: () => timers.shift()!() };
}

const metric = (seq: number, step: number, loss: number) => ({ type: "metric", run: 7, seq, step, epoch: step / 10, values: { "train/loss": loss } });

describe("RunStream", () => {
  it("delivers the events of batch frames once each, in order, like single ones", () => {
    const h = harness();
    h.stream.start();
    const s = h.sockets[0];
    s.send({ type: "state", run: { id: 7 }, seq: 0 });
    s.send({ type: "batch", events: [metric(1, 10, 1.0), metric(2, 20, 0.9)], seq: 2 });
    s.send({ type: "replayed", seq: 2 });
    // A batch that overlaps what was delivered: only the new events go on.
    s.send({ type: "batch", events: [metric(2, 20, 0.9), metric(3, 30, 0.8), metric(4, 40, 0.7)], seq: 4 });
    s.send(metric(5, 50, 0.6));
    expect(h.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(h.stream.lastSeq).toBe(5);
    s.drop();
    h.fire();
    expect(h.sockets[1].url).toContain("since=5");
  });

  it("delivers each event once even when the server repeats seqs", () => {
    const h = harness();
    h.stream.start();
    const s = h.sockets[0];
    s.send({ type: "state", run: { id: 7 }, seq: 3 });
    s.send(metric(1, 10, 1.0));
    s.send(metric(2, 20, 0.9));
    s.send(metric(2, 20, 0.9)); // resent
    s.send(metric(1, 10, 1.0)); // older
    s.send({ type: "replayed", seq: 2 });
    s.send(metric(3, 30, 0.8));
    expect(h.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(h.stream.lastSeq).toBe(3);
    expect(h.states).toContain("live");
  });

  it("accepts gaps in seq (it never stalls waiting for a missing one)", () => {
    const h = harness();
    h.stream.start();
    h.sockets[0].send(metric(1, 10, 1.0));
    h.sockets[0].send(metric(5, 10, 0.95));
    expect(h.events.map((e) => e.seq)).toEqual([1, 5]);
  });

  it("reconnects after a drop asking for events after the last seq it saw", () => {
    const h = harness(4);
    h.stream.start();
    expect(h.sockets[0].url).toContain("since=4");
    h.sockets[0].send(metric(5, 50, 0.7));
    h.sockets[0].send(metric(6, 60, 0.6));
    h.sockets[0].drop();
    expect(h.states.at(-1)).toBe("reconnecting");
    h.fire();
    expect(h.sockets).toHaveLength(2);
    expect(h.sockets[1].url).toContain("since=6");
    // The new connection replays from 6 on; anything it resends below is ignored.
    h.sockets[1].send({ type: "state", run: { id: 7 }, seq: 8 });
    h.sockets[1].send(metric(6, 60, 0.6));
    h.sockets[1].send(metric(7, 70, 0.5));
    h.sockets[1].send({ type: "replayed", seq: 7 });
    h.sockets[1].send(metric(8, 80, 0.4));
    expect(h.events.map((e) => e.seq)).toEqual([5, 6, 7, 8]);
  });

  it("ignores frames from a socket it already replaced", () => {
    const h = harness();
    h.stream.start();
    const old = h.sockets[0];
    old.drop();
    h.fire();
    old.send(metric(1, 10, 1.0));
    expect(h.events).toHaveLength(0);
    h.sockets[1].send(metric(1, 10, 1.0));
    expect(h.events).toHaveLength(1);
  });

  it("stops for good when the server refuses the user (4404) and after stop()", () => {
    const h = harness();
    h.stream.start();
    h.sockets[0].drop(4404);
    expect(h.states.at(-1)).toBe("denied");
    expect(h.timers).toHaveLength(0);

    const g = harness();
    g.stream.start();
    g.stream.stop();
    expect(g.sockets[0].closed).toBe(true);
    g.sockets[0].send(metric(1, 1, 1));
    expect(g.events).toHaveLength(0);
  });

  it("skips frames that are not JSON objects with a type", () => {
    const h = harness();
    h.stream.start();
    h.sockets[0].onmessage?.({ data: "not json" });
    h.sockets[0].onmessage?.({ data: "[1,2]" });
    h.sockets[0].send(metric(1, 1, 1));
    expect(h.events).toHaveLength(1);
  });
});
