import { afterEach, describe, expect, it, vi } from "vitest";
import { runsApi } from "./api";
import { evaluateAsJob } from "./evaluateJob";

const job = (state: string, extra: Record<string, unknown> = {}) => ({ id: 7, kind: "runs.evaluate", state, progress: null, error: null, result: null, ...extra });

describe("evaluateAsJob", () => {
  afterEach(() => vi.restoreAllMocks());

  it("follows the job to its end and answers its result", async () => {
    vi.spyOn(runsApi, "evaluate").mockResolvedValue(job("queued") as never);
    const polled = vi.spyOn(runsApi, "job").mockResolvedValueOnce(job("running") as never).mockResolvedValueOnce(job("done", { result: { rows: 30 } }) as never);
    const states: string[] = [];
    const answer = await evaluateAsJob(3, "best", (j) => states.push(j.state), async () => undefined);
    expect(answer).toEqual({ rows: 30 });
    expect(states).toEqual(["queued", "running", "done"]);
    expect(polled).toHaveBeenCalledWith(7);
  });

  it("rejects with the job's message when it fails", async () => {
    vi.spyOn(runsApi, "evaluate").mockResolvedValue(job("failed", { error: { code: "checkpoint_pruned", message: "Checkpoint 'best' is no longer kept." } }) as never);
    await expect(evaluateAsJob(3, "best", () => undefined, async () => undefined)).rejects.toThrow("no longer kept");
  });
});
