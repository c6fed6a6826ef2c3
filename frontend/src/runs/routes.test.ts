import { describe, expect, it } from "vitest";
import { BASE, parseRoute } from "../router";
import { streamUrl } from "./api";
import { trainBlocker } from "./train/rules";

describe("run routes and the Train button", () => {
  it("parses the datasets, runs and run pages", () => {
    expect(parseRoute(BASE + "/datasets")).toEqual({ page: "datasets" });
    expect(parseRoute(BASE + "/runs")).toEqual({ page: "runs", graphId: null });
    expect(parseRoute(BASE + "/runs", "?graph=12")).toEqual({ page: "runs", graphId: 12 });
    expect(parseRoute(BASE + "/runs", "?graph=x")).toEqual({ page: "runs", graphId: null });
    expect(parseRoute(BASE + "/runs/7/")).toEqual({ page: "run", runId: 7 });
    expect(parseRoute(BASE + "/graphs/3")).toEqual({ page: "editor", graphId: 3 });
    expect(parseRoute(BASE + "/runs/7/lineage")).toEqual({ page: "lineage", runId: 7 });
    expect(parseRoute(BASE + "/models/2/versions/3/lineage/")).toEqual({ page: "versionLineage", modelId: 2, version: 3 });
    expect(parseRoute(BASE + "/datasets/4/versions/1/lineage")).toEqual({ page: "datasetLineage", datasetId: 4, version: 1 });
    expect(parseRoute(BASE + "/datasets/4/versions/x/lineage")).toEqual({ page: "missing" });
  });

  it("resumes the stream after the seq it asks for, over wss on https", () => {
    expect(streamUrl(7, 42, { protocol: "http:", host: "h:8000" })).toBe("ws://h:8000/ws/runs/7/?since=42");
    expect(streamUrl(7, 0, { protocol: "https:", host: "h" })).toBe("wss://h/ws/runs/7/?since=0");
  });

  it("lets a graph train only once it is saved, unchanged and valid", () => {
    expect(trainBlocker({ savedRevision: null, dirty: true, valid: true })).toBe("Save the graph first");
    expect(trainBlocker({ savedRevision: 2, dirty: true, valid: true })).toBe("Save your changes first");
    expect(trainBlocker({ savedRevision: 2, dirty: false, valid: null })).toBe("Checking the graph…");
    expect(trainBlocker({ savedRevision: 2, dirty: false, valid: false })).toBe("Fix the graph's errors first");
    expect(trainBlocker({ savedRevision: 2, dirty: false, valid: true })).toBeNull();
  });
});
