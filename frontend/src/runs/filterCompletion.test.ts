import { describe, expect, it } from "vitest";
import { FIXED_FIELDS, OPERATORS, STATUSES, completions, filterFields, lastWord, mergeFields } from "./filterCompletion";
import type { Run } from "./types";

function run(extra: Partial<Run>): Run {
  return { graph: 1, revision: 1, config: {}, summary: { final: {}, best: {} }, final_metrics: {}, best_checkpoint: null, ...extra } as unknown as Run;
}

describe("filter fields", () => {
  it("lists the loaded runs' metrics, best metrics, config paths and node parameters, then the fixed fields", () => {
    const runs = [
      run({
        config: { optimizer: { lr: 0.1 }, epochs: 2 },
        summary: { final: { "val/accuracy": 0.9 }, best: {} } as unknown as Run["summary"],
        best_checkpoint: { name: "best", step: 3, epoch: 1, metrics: { "val/loss": 0.2 } },
      }),
      run({ revision: 2, config: { optimizer: { lr: 0.01 } } }),
    ];
    const graphs = new Map([["1:1", { "nodes.fc1.out_features": 16, "inputs.x.shape": [4] }]]);
    expect(filterFields(runs, graphs)).toEqual([
      "best.val/loss",
      "config.epochs",
      "config.optimizer.lr",
      "metrics.val/accuracy",
      "nodes.fc1.out_features",
      ...FIXED_FIELDS,
    ]);
  });
});

describe("completions", () => {
  const fields = ["metrics.val/accuracy", "metrics.val/loss", "config.optimizer.lr", "status", "tags"];

  it("completes the field at the start, after and/or/not and after a parenthesis", () => {
    expect(completions("met", fields)).toEqual(["metrics.val/accuracy", "metrics.val/loss"]);
    expect(completions('status = "failed" and metrics.val/a', fields)).toEqual(['status = "failed" and metrics.val/accuracy']);
    expect(completions("not (con", fields)).toEqual(["not (config.optimizer.lr"]);
    expect(completions("tags = \"x\" OR st", fields)).toEqual(['tags = "x" OR status']);
  });

  it("offers nothing where a value or an operator is typed, or the field is whole", () => {
    expect(completions("metrics.val/loss > 0", fields)).toEqual([]);
    expect(completions('status = fa', fields)).toEqual([]);
    expect(completions("status", fields)).toEqual([]);
    expect(completions("candidate", fields)).toEqual([]);
  });

  it("offers the operators after a field and a space, the statuses after status =, and/or after a value", () => {
    expect(completions("metrics.val/loss ", fields)).toEqual(OPERATORS.map((op) => `metrics.val/loss ${op} `));
    expect(completions("a > 1 and config.optimizer.lr ", fields, 2)).toEqual(["a > 1 and config.optimizer.lr > ", "a > 1 and config.optimizer.lr < "]);
    expect(completions("status = ", fields)).toEqual(STATUSES.map((st) => `status = "${st}"`));
    expect(completions("metrics.val/loss < 0.5 ", fields)).toEqual(["metrics.val/loss < 0.5 and ", "metrics.val/loss < 0.5 or "]);
    expect(completions('(tags = "x") ', fields)).toEqual(['(tags = "x") and ', '(tags = "x") or ']);
    expect(completions("colour ", fields)).toEqual([]);
  });

  it("puts the server's names first and the loaded runs' after, once each", () => {
    expect(mergeFields(["metrics.a", "config.b"], ["config.b", "metrics.c"])).toEqual(["metrics.a", "config.b", "metrics.c"]);
  });

  it("offers every field on an empty box, up to the limit", () => {
    expect(completions("", fields, 2)).toEqual(fields.slice(0, 2));
  });

  it("finds the word being typed", () => {
    expect(lastWord("a > 1 and best.val/lo")).toEqual({ start: 10, word: "best.val/lo" });
    expect(lastWord("a > ")).toEqual({ start: 4, word: "" });
  });
});
