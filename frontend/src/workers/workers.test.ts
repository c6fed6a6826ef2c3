import { describe, expect, it } from "vitest";
import { type QueuedRun, type WorkerRow, devicesText, queuesText, priorityValue, queueOrder, workerDoing } from "./workers";

const worker = (extra: Partial<WorkerRow>): WorkerRow =>
  ({ hostname: "w1@host", kind: "cpu", devices: ["cpu"], capacity: 1, queues: ["train.cpu.1"], trains: true, busy: false, current_run: null, started_at: "2026-01-01T10:00:00Z", last_seen: "2026-01-01T10:05:00Z", alive: true, ...extra }) as WorkerRow;

describe("workerDoing", () => {
  it("names the run it trains when the team may see it", () => {
    expect(workerDoing(worker({ busy: true, current_run: { id: 12, name: "wide" } }))).toBe("training run 12 (wide)");
    expect(workerDoing(worker({ busy: true, current_run: null }))).toBe("training another team's run");
  });
  it("says idle, and whether it only takes short jobs", () => {
    expect(workerDoing(worker({}))).toBe("idle: ready for a run");
    expect(workerDoing(worker({ trains: false }))).toBe("idle (short jobs only)");
  });
  it("says when a silent worker was last heard from", () => {
    expect(workerDoing(worker({ alive: false }), "en-GB")).toMatch(/^not heard from since \d\d:\d\d$/);
  });
});

describe("devicesText", () => {
  it("lists the devices and how many one run may use", () => {
    expect(devicesText(worker({ kind: "gpu", devices: ["cuda:0", "cuda:1"], capacity: 2 }))).toBe("cuda:0, cuda:1 · up to 2 per run");
    expect(devicesText(worker({ devices: [] }))).toBe("cpu");
  });
});

describe("queueOrder", () => {
  const run = (id: number, priority: number, position?: number) =>
    ({ id, priority, created_at: `2026-01-01T10:0${id}:00Z`, queue: position ? { position, ahead: position - 1, waiting_for: "behind", detail: "" } : null }) as QueuedRun;
  it("follows the server's positions", () => {
    expect(queueOrder([run(1, 0, 2), run(2, 5, 1)]).map((r) => r.id)).toEqual([2, 1]);
  });
  it("falls back to priority (higher first), then age", () => {
    expect(queueOrder([run(1, 0), run(2, 3), run(3, 0)]).map((r) => r.id)).toEqual([2, 1, 3]);
  });
});

describe("priorityValue", () => {
  it("sends a whole number as a number and anything else as typed", () => {
    expect(priorityValue(" 5 ")).toBe(5);
    expect(priorityValue("-3")).toBe(-3);
    expect(priorityValue("high")).toBe("high");
  });
});

describe("queuesText", () => {
  it("groups the train queues by kind and device count", () => {
    expect(queuesText(["short", "train.any.1", "train.any.2", "train.cpu.1", "train.cpu.2"])).toBe("train any, cpu (1–2 devices) · short");
    expect(queuesText(["train.gpu.1"])).toBe("train gpu (1 device)");
    expect(queuesText(["short"])).toBe("short");
  });
});
