import { describe, expect, it } from "vitest";
import { fieldsOfColumns, narrowGroups, pickerGroups, toggleKey } from "./runColumns";

const answer = { metrics: ["test/accuracy", "val/loss"], best: ["val/accuracy"], config: ["optimizer.lr"], nodes: ["nodes.fc1.out_features"], sampled: 2, complete: true };

describe("the column picker's names", () => {
  it("groups the server's names as fields of the query language", () => {
    expect(pickerGroups(answer).map((g) => [g.id, g.keys])).toEqual([
      ["final", ["metrics.test/accuracy", "metrics.val/loss"]],
      ["best", ["best.val/accuracy"]],
      ["config", ["config.optimizer.lr"]],
      ["graph", ["nodes.fc1.out_features"]],
    ]);
    expect(fieldsOfColumns(answer)).toEqual(["metrics.test/accuracy", "metrics.val/loss", "best.val/accuracy", "config.optimizer.lr", "nodes.fc1.out_features"]);
  });

  it("narrows to what holds the typed text and drops empty groups", () => {
    expect(narrowGroups(pickerGroups(answer), "ACC").map((g) => g.keys)).toEqual([["metrics.test/accuracy"], ["best.val/accuracy"]]);
    expect(narrowGroups(pickerGroups(answer), "zzz")).toEqual([]);
  });

  it("shows a column at the end and hides it", () => {
    expect(toggleKey(["a", "b"], "c", true)).toEqual(["a", "b", "c"]);
    expect(toggleKey(["a", "b"], "a", false)).toEqual(["b"]);
    expect(toggleKey(["a", "b"], "a", true)).toEqual(["b", "a"]);
  });
});
