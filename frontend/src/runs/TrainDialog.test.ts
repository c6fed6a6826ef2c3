import { describe, expect, it } from "vitest";
import { defaultDataset, trainBlocker } from "./TrainDialog";
import type { Dataset } from "./types";

function ds(id: number, name: string, feature_shape: number[]): Dataset {
  return {
    id, team: 1, name, kind: "builtin", status: "ready", options: {}, error: null, original_filename: "",
    size: 0, created_by: null, created_at: "", summary: { task: "classification", feature_shape },
  } as Dataset;
}

describe("the train dialog", () => {
  const people = ds(1, "people", [3]);
  const digits = ds(2, "digits", [1, 8, 8]);

  it("offers first the dataset whose features fit the graph's input", () => {
    expect(defaultDataset([people, digits], [[1, 8, 8]])?.name).toBe("digits");
    expect(defaultDataset([people, digits], [[4]])?.name).toBe("people");
    expect(defaultDataset([people, digits], null)?.name).toBe("people");
    expect(defaultDataset([], [[4]])).toBeUndefined();
  });

  it("says why training cannot start", () => {
    expect(trainBlocker({ savedRevision: null, dirty: false, valid: true })).toBe("Save the graph first");
    expect(trainBlocker({ savedRevision: 1, dirty: false, valid: true })).toBeNull();
  });
});
