import { describe, expect, it } from "vitest";
import { fromDataset, fromExplanation, fromExports, fromJob, jobView } from "./jobState";

describe("one view of background work", () => {
  it("labels each phase the same way", () => {
    expect(jobView("waiting")).toEqual({ phase: "waiting", fraction: null, label: "Waiting…", error: null });
    expect(jobView("working")).toEqual({ phase: "working", fraction: null, label: "Working…", error: null });
    expect(jobView("working", 0.424)).toEqual({ phase: "working", fraction: 0.424, label: "Working… 42%", error: null });
    expect(jobView("done", 1)).toEqual({ phase: "done", fraction: null, label: "Done", error: null });
    expect(jobView("failed", null, "disk full")).toEqual({ phase: "failed", fraction: null, label: "Failed: disk full", error: "disk full" });
    expect(jobView("failed").label).toBe("Failed: Something went wrong.");
  });

  it("keeps a fraction within 0..1 and drops one that is not a number", () => {
    expect(jobView("working", 1.7).fraction).toBe(1);
    expect(jobView("working", -0.2).label).toBe("Working… 0%");
    expect(jobView("working", Number.NaN).fraction).toBeNull();
  });

  it("maps a server job's states", () => {
    const job = (state: "queued" | "running" | "done" | "failed" | "cancelled", progress: number | null = null, error: { message: string; code: string } | null = null) => ({ state, progress, error });
    expect(fromJob(job("queued")).phase).toBe("waiting");
    expect(fromJob(job("running", 0.5)).label).toBe("Working… 50%");
    expect(fromJob(job("running")).fraction).toBeNull();
    expect(fromJob(job("done", 1)).label).toBe("Done");
    expect(fromJob(job("failed", null, { message: "The worker was lost.", code: "worker_lost" }))).toMatchObject({ phase: "failed", error: "The worker was lost." });
    expect(fromJob(job("failed")).error).toBe("The job failed.");
    expect(fromJob(job("cancelled"))).toMatchObject({ phase: "failed", error: "It was cancelled." });
  });

  it("maps a dataset being read: no figure yet is waiting for the worker", () => {
    expect(fromDataset({ status: "processing", progress: null, error: null }).label).toBe("Waiting…");
    expect(fromDataset({ status: "processing", progress: 0.424, error: null })).toMatchObject({ phase: "working", fraction: 0.424, label: "Working… 42%" });
    expect(fromDataset({ status: "ready", progress: 1, error: null }).phase).toBe("done");
    expect(fromDataset({ status: "failed", error: { message: "'zz' is not a number", row: 8, column: "b" } }).error).toBe("row 8, column 'b': 'zz' is not a number");
    expect(fromDataset({ status: "failed", error: null }).error).toBe("The file could not be read.");
  });

  it("maps an explanation: running has no figure", () => {
    expect(fromExplanation({ status: "queued", error: "" }).phase).toBe("waiting");
    expect(fromExplanation({ status: "running", error: "" })).toMatchObject({ phase: "working", fraction: null, label: "Working…" });
    expect(fromExplanation({ status: "succeeded", error: "" }).phase).toBe("done");
    expect(fromExplanation({ status: "failed", error: "No convolution." }).label).toBe("Failed: No convolution.");
    expect(fromExplanation({ status: "failed", error: "" }).error).toBe("The explanation failed.");
  });

  it("maps a run's export task; nothing asked for is no job", () => {
    expect(fromExports({ status: "none", note: "" })).toBeNull();
    expect(fromExports({ status: "pending", note: "" })).toMatchObject({ phase: "working", fraction: null });
    expect(fromExports({ status: "ready", note: "" })?.phase).toBe("done");
    expect(fromExports({ status: "failed", note: "opset 17 is missing" })?.error).toBe("opset 17 is missing");
    expect(fromExports({ status: "failed", note: "" })?.error).toBe("The export failed.");
  });
});
