import { describe, expect, it } from "vitest";
import type { Dataset } from "../runs/types";
import { needsTarget, targetChoices, type TrainableDataset } from "./TargetChooser";

function table(extra: Partial<TrainableDataset>): TrainableDataset {
  return {
    id: 1, team: 1, name: "flowers", kind: "csv", status: "ready", options: {}, error: null,
    original_filename: "flowers.csv", size: 10, created_by: null, created_at: "", updated_at: "", recipe: {}, progress: null, latest_version: null,
    summary: {
      task: null,
      columns: [
        { name: "petal", kind: "numeric", missing: 0, distinct: 12 },
        { name: "species", kind: "categorical", missing: 0, distinct: 3 },
      ],
    },
    ...extra,
  };
}

describe("choosing a CSV's target", () => {
  it("asks only for ready tables the server says need one", () => {
    expect(needsTarget(table({ needs: "target", trainable: false }))).toBe(true);
    expect(needsTarget(table({ needs: null, trainable: true }))).toBe(false);
    expect(needsTarget(table({ needs: "target", status: "processing" }))).toBe(false);
    expect(needsTarget(table({ kind: "images" as Dataset["kind"], needs: null }))).toBe(false);
    // Without `needs` (an older server), a table with no task has no target.
    expect(needsTarget(table({}))).toBe(true);
  });

  it("offers every column with its kind and number of values", () => {
    expect(targetChoices(table({}))).toEqual([
      { name: "petal", label: "petal (numeric, 12 values)" },
      { name: "species", label: "species (categorical, 3 values)" },
    ]);
    expect(targetChoices(table({ summary: {} }))).toEqual([]);
    const one = table({ summary: { columns: [{ name: "kind", kind: "categorical", missing: 0, distinct: 1 }] } });
    expect(targetChoices(one)).toEqual([{ name: "kind", label: "kind (categorical, 1 value)" }]);
  });
});
