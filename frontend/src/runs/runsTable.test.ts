import { describe, expect, it } from "vitest";
import {
  DEFAULT_SORT,
  canCompare,
  columnKeys,
  differingFields,
  distinctRevisions,
  flattenGraph,
  revisionKey,
  flattenConfig,
  formatConfigValue,
  metricColumns,
  nextSort,
  runName,
  orderingOf,
  columnsOfKeys,
  selectedInOrder,
  sortOf,
  tableColumns,
  withTag,
  type RunRow,
} from "./runsTable";

function run(id: number, extra: Partial<RunRow> = {}): RunRow {
  return {
    id,
    name: "",
    tags: [],
    status: "succeeded",
    created_by: "ada",
    created_at: `2026-01-0${id}T10:00:00Z`,
    graph_name: "mlp",
    revision: 1,
    dataset_name: "iris",
    config: { epochs: 5, optimizer: { name: "adam", lr: 0.01 } },
    final_metrics: {},
    ...extra,
  } as unknown as RunRow;
}

describe("differing configuration fields", () => {
  it("flattens nested objects to dotted paths, lists stay one value", () => {
    expect(flattenConfig({ epochs: 3, optimizer: { lr: 0.1, betas: [0.9, 0.99] }, best: null, freeze: [] })).toEqual({
      epochs: 3,
      "optimizer.lr": 0.1,
      "optimizer.betas": [0.9, 0.99],
      best: null,
      freeze: [],
    });
  });

  it("lists only the fields whose value is not the same everywhere, sorted", () => {
    const configs = [
      { epochs: 5, optimizer: { lr: 0.1, name: "adam" }, class_weights: [1, 2] },
      { epochs: 5, optimizer: { lr: 0.01, name: "adam" }, class_weights: [1, 2] },
      { epochs: 5, optimizer: { lr: 0.001, name: "adam" }, class_weights: [1, 3] },
    ];
    expect(differingFields(configs)).toEqual(["class_weights", "optimizer.lr"]);
  });

  it("shows a value as typed, without float noise", () => {
    expect([0.001 * 9, 3, 1e-5, true, "adam", [1, 2], null, undefined].map(formatConfigValue)).toEqual([
      "0.009", "3", "0.00001", "true", "adam", "[1,2]", "–", "–",
    ]);
  });

  it("compares only the runs that have a field, and one run is nothing to compare", () => {
    expect(differingFields([{ a: 1 }, { a: 1, scheduler: { warmup_steps: 10 } }])).toEqual([]);
    expect(differingFields([{ a: 1 }])).toEqual([]);
    expect(differingFields([{ best: null }, { best: { metric: "val/loss" } }])).toEqual(["best.metric"]);
  });

  it("does not count an imported run (no config) as different in every field", () => {
    const trained = { epochs: 5, batch_size: 32, optimizer: { name: "adam", lr: 0.001 }, seed: 0 };
    expect(differingFields([trained, {}, { ...trained }])).toEqual([]);
    expect(differingFields([trained, {}, { ...trained, optimizer: { name: "adam", lr: 0.01 } }])).toEqual(["optimizer.lr"]);
  });
});

describe("the table's columns and sorting", () => {
  const a = run(1, { name: "Baseline", config: { optimizer: { lr: 0.1 } }, duration_s: 30, summary: { final: { "val/loss": 0.5, "test/accuracy": 0.9, lr: 0.1 }, best: { "val/loss": { value: 0.4, step: 3, epoch: 1, mode: "min" } } } });
  const b = run(2, { config: { optimizer: { lr: 0.01 } }, duration_s: null, summary: { final: { "val/loss": 0.3 }, best: { "val/loss": { value: 0.2, step: 9, epoch: 3, mode: "min" } } } });
  const c = run(3, { name: "wide", config: { optimizer: { lr: 1 } }, duration_s: 12, status: "failed", final_metrics: { "val/loss": 0.7 } });

  it("names a run without a name by its id", () => {
    expect(runName(b)).toBe("run 2");
    expect(runName({ id: 4, name: "  " })).toBe("run 4");
    expect(runName(a)).toBe("Baseline");
  });

  it("has a column per differing field and per final and best metric (no lr, no train/)", () => {
    const cols = tableColumns([a, b, c]);
    expect(cols.config.map((x) => x.label)).toEqual(["optimizer.lr"]);
    expect(cols.final.map((x) => x.label)).toEqual(["test/accuracy"]); // val/loss has a best column
    expect(metricColumns([run(5, { final_metrics: { "val/loss": 1, "test/loss": 1, "val/mae": 2 } })]).final).toEqual(["val/mae", "test/loss"]);
    expect(cols.best.map((x) => x.label)).toEqual(["val/loss"]);
    expect(metricColumns([c]).final).toEqual(["val/loss"]); // an older answer: final_metrics
  });

  it("has a column per graph parameter that differs among the runs' revisions", () => {
    const r1 = run(1, { graph: 4, revision: 1 });
    const r2 = run(2, { graph: 4, revision: 2 });
    const r3 = run(3, { graph: 4, revision: 2 });
    const spec = (width: number) => ({
      inputs: [{ id: "x", shape: [4] }],
      nodes: [
        { id: "fc1", op: "Linear", params: { out_features: width } },
        { id: "act", op: "ReLU" },
      ],
    });
    expect(flattenGraph(spec(16))).toEqual({ "inputs.x.shape": [4], "nodes.fc1.op": "Linear", "nodes.fc1.out_features": 16, "nodes.act.op": "ReLU" });
    expect(distinctRevisions([r1, r2, r3])).toEqual([{ graph: 4, revision: 1 }, { graph: 4, revision: 2 }]);
    const graphs = new Map([
      [revisionKey(r1), flattenGraph(spec(16))],
      [revisionKey(r2), flattenGraph(spec(64))],
    ]);
    const cols = tableColumns([r1, r2, r3], graphs);
    expect(cols.graph.map((c) => c.label)).toEqual(["nodes.fc1.out_features"]);
    expect(cols.graph[0].key).toBe("nodes.fc1.out_features");
    expect(tableColumns([r1, r2, r3]).graph).toEqual([]); // revisions not fetched yet
  });

  it("names each column by its field of the query language, which the server sorts by", () => {
    const cols = tableColumns([a, b, c]);
    expect(cols.fixed.map((x) => x.key)).toEqual(["name", "status", null, "created_at", "duration", null, null]);
    expect(cols.config.map((x) => x.key)).toEqual(["config.optimizer.lr"]);
    expect(cols.best.map((x) => x.key)).toEqual(["best.val/loss"]);
    expect(orderingOf(DEFAULT_SORT)).toBe("-created_at");
    expect(orderingOf({ column: "best.val/loss", direction: "asc" })).toBe("best.val/loss");
    expect(sortOf("-metrics.val/accuracy")).toEqual({ column: "metrics.val/accuracy", direction: "desc" });
    expect(sortOf("")).toEqual(DEFAULT_SORT);
  });

  it("shows the columns a saved view or the picker lists, and lists the shown ones", () => {
    const cols = tableColumns([a, b, c]);
    expect(columnKeys(cols)).toEqual(["config.optimizer.lr", "metrics.test/accuracy", "best.val/loss"]);
    const shown = columnsOfKeys(["best.val/loss", "nodes.fc1.out_features", "config.epochs", "colour", "metrics.test/accuracy"]);
    expect(shown.fixed).toHaveLength(7);
    expect(columnKeys(shown)).toEqual(["config.epochs", "nodes.fc1.out_features", "metrics.test/accuracy", "best.val/loss"]);
    expect(shown.config[0]).toMatchObject({ id: "config:epochs", label: "epochs" });
    expect(shown.graph[0].raw?.({ graph_params: { "nodes.fc1.out_features": 64 } } as unknown as RunRow)).toBe(64);
  });

  it("turns a column around on a second click", () => {
    expect(nextSort({ column: "name", direction: "asc" }, "name")).toEqual({ column: "name", direction: "desc" });
    expect(nextSort({ column: "name", direction: "desc" }, "status")).toEqual({ column: "status", direction: "asc" });
    expect(nextSort(DEFAULT_SORT, "duration")).toEqual({ column: "duration", direction: "desc" });
    expect(nextSort(DEFAULT_SORT, "metrics.val/accuracy")).toEqual({ column: "metrics.val/accuracy", direction: "desc" });
    expect(nextSort(DEFAULT_SORT, "best.val/loss")).toEqual({ column: "best.val/loss", direction: "asc" });
  });
});

describe("filters, selection and tags", () => {
  it("compares 2 to 100 runs, held ones in the table's order, then the others as ticked", () => {
    expect([0, 1, 2, 100, 101].map(canCompare)).toEqual([false, false, true, true, false]);
    expect(selectedInOrder([run(3), run(1), run(2)], new Set([9, 2, 3]))).toEqual([3, 2, 9]);
  });

  it("adds a tag once, trimmed", () => {
    expect(withTag(["a"], "  b  c ")).toEqual(["a", "b c"]);
    expect(withTag(["a"], "a")).toEqual(["a"]);
    expect(withTag(["a"], "   ")).toEqual(["a"]);
  });
});
