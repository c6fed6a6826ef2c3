import { describe, expect, it } from "vitest";
import { datasetOfRun, defaultDataset, priorityBody, recipeOf, splitInitErrors, takePriorityErrors, trainBlocker, valuesForRun } from "./rules";
import type { ConfigForm } from "../configForm";
import type { Dataset } from "../types";

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

  it("trains a run again on its split and transforms, and resumes with twice the epochs", () => {
    const recipe = { source: { kind: "builtin", name: "iris" }, split: { val: 0.2, test: 0.1, seed: 3 }, transforms: { normalize: true } };
    expect(recipeOf({ recipe })).toEqual({ split: { val: 0.2, test: 0.1, seed: 3 }, transforms: { normalize: true } });
    expect(recipeOf({ recipe: {} })).toEqual({});
    expect(recipeOf(null)).toEqual({});
    const form: ConfigForm = {
      fields: [{ path: "epochs", label: "Epochs", kind: "int" }],
      defaultValues: () => ({ epochs: "10" }),
      buildConfig: () => ({ config: {}, errors: {} }),
    };
    expect(valuesForRun(form, { config: { epochs: 6 } })).toEqual({ epochs: "6" });
    expect(valuesForRun(form, { config: { epochs: 6 } }, { run: 1, checkpoint: "epoch-0006", mode: "resume" })).toEqual({ epochs: "12" });
    expect(valuesForRun(form, { config: { epochs: 6 } }, { run: 1, checkpoint: "best", mode: "finetune" })).toEqual({ epochs: "6" });
  });

  it("shows the start-from problems of a 400 with the start-from choice", () => {
    expect(splitInitErrors({ "init.checkpoint": ["no checkpoint epoch-9"], init: ["resume needs the same revision"], "config.epochs": ["bad"] })).toEqual({
      init: ["checkpoint: no checkpoint epoch-9", "resume needs the same revision"],
      rest: { "config.epochs": ["bad"] },
    });
  });

  it("starts a run of imported weights on no dataset until one is picked", () => {
    expect(datasetOfRun({ dataset: 7 })).toBe("7");
    expect(datasetOfRun({ dataset: null })).toBe("");
    expect(datasetOfRun(null)).toBe("");
  });

  it("sends the priority as a number, and what is not one as typed for the server to refuse", () => {
    expect(priorityBody("0")).toEqual({ priority: 0 });
    expect(priorityBody(" -3 ")).toEqual({ priority: -3 });
    expect(priorityBody("+10")).toEqual({ priority: 10 });
    expect(priorityBody("")).toEqual({});
    expect(priorityBody("2.5")).toEqual({ priority: "2.5" });
    const fields: Record<string, unknown> = { priority: ["priority must be an integer from -10 to 10."], dataset: ["x"] };
    expect(takePriorityErrors(fields)).toEqual(["priority must be an integer from -10 to 10."]);
    expect(fields).toEqual({ dataset: ["x"] });
    expect(takePriorityErrors({})).toEqual([]);
  });
});
