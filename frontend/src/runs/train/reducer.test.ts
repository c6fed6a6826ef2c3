import { describe, expect, it } from "vitest";
import { ApiError } from "../../api/client";
import type { ConfigForm } from "../configForm";
import type { InitPlan } from "../initPlan";
import type { Dataset, Run } from "../types";
import { NO_ERRORS, type TrainAction, type TrainState, initialTrainState, onRunsData, planBlocks, startDisabled, trainReducer } from "./reducer";
import { dialogTitle, epochsOf, takeFreezeErrors } from "./rules";
import { failedStart, startStep } from "./submit";

const form: ConfigForm = {
  fields: [
    { path: "epochs", label: "Epochs", kind: "int" },
    { path: "optimizer.lr", label: "Learning rate", kind: "float" },
  ],
  defaultValues: () => ({ epochs: "10", "optimizer.lr": "0.001" }),
  buildConfig: (values): ReturnType<ConfigForm["buildConfig"]> =>
    values.epochs === "x" ? { config: {}, errors: { epochs: ["Enter a whole number."] } } : { config: { epochs: Number(values.epochs) }, errors: {} },
};

function ds(id: number): Dataset {
  return { id, name: `d${id}`, kind: "builtin", status: "ready", summary: { task: "classification", feature_shape: [3] } } as unknown as Dataset;
}

function run(over: Partial<Run> = {}): Run {
  return { id: 5, team: 2, graph: 1, revision: 3, dataset: 7, config: { epochs: 4, freeze: ["fc1"] }, recipe: { split: { val: 0.2 } }, ...over } as unknown as Run;
}

function apply(state: TrainState, ...actions: TrainAction[]): TrainState {
  return actions.reduce(trainReducer, state);
}

const fresh = () => initialTrainState(1, null, null);

describe("the train dialog's state", () => {
  it("opens on the revision, or filled from the run it was opened from", () => {
    const s = fresh();
    expect(s).toMatchObject({ revision: 1, datasetId: "", priority: "0", team: null, form: null, freeze: [], init: null, busy: false });
    const again = initialTrainState(3, run(), { run: 5, checkpoint: "best", mode: "finetune" });
    expect(again).toMatchObject({ datasetId: "7", team: 2, freeze: ["fc1"], init: { run: 5, checkpoint: "best" } });
    expect(initialTrainState(3, run({ dataset: null }), null).datasetId).toBe("");
  });

  it("offers the first fitting dataset unless one is chosen already", () => {
    expect(apply(fresh(), { type: "datasetsLoaded", datasets: [ds(1), ds(2)], first: ds(2) }).datasetId).toBe("2");
    expect(apply(initialTrainState(1, run(), null), { type: "datasetsLoaded", datasets: [ds(1)], first: ds(1) }).datasetId).toBe("7");
    const none = apply(fresh(), { type: "datasetsLoaded", datasets: [ds(1)], first: undefined });
    expect(none.datasetId).toBe("");
    expect(none.datasets).toHaveLength(1);
  });

  it("drops a field's messages when its value changes, and every message when the dataset does", () => {
    const errors = { fields: { epochs: ["bad"], priority: ["no"], dataset: ["pick"] }, graph: ["node fc1: too wide"], general: [] };
    const s = apply(fresh(), { type: "formLoaded", form, values: form.defaultValues() }, { type: "failed", errors, initErrors: ["x"] });
    const typed = apply(s, { type: "valueChanged", path: "epochs", value: "12" });
    expect(typed.values.epochs).toBe("12");
    expect(typed.errors.fields).toEqual({ epochs: [], priority: ["no"], dataset: ["pick"] });
    expect(apply(s, { type: "valueChanged", path: "optimizer.lr", value: "0.1" }).errors).toBe(s.errors);
    expect(apply(s, { type: "priorityChanged", priority: "3" }).errors.fields.priority).toEqual([]);
    expect(apply(s, { type: "datasetPicked", datasetId: "1" }).errors).toEqual(NO_ERRORS);
    expect(apply(s, { type: "initChanged", init: null }).initErrors).toEqual([]);
  });

  it("keeps what it showed when the settings cannot load, and replaces it when the rest cannot", () => {
    const s = apply(fresh(), { type: "refused", fields: { dataset: ["Choose a dataset."] } }, { type: "formFailed", message: "offline" });
    expect(s.errors.general).toEqual(["The training settings could not be loaded: offline"]);
    expect(s.errors.fields.dataset).toEqual(["Choose a dataset."]);
    expect(apply(s, { type: "loadFailed", message: "gone" }).errors).toEqual({ ...NO_ERRORS, general: ["gone"] });
  });

  it("waits for the checkpoint's plan, and a plan with problems stops the start", () => {
    const ready = apply(fresh(), { type: "formLoaded", form, values: form.defaultValues() }, { type: "datasetsLoaded", datasets: [ds(1)], first: ds(1) });
    expect(startDisabled(ready)).toBe(false);
    const waiting = apply(ready, { type: "initChanged", init: { run: 5, checkpoint: "best", mode: "finetune" } });
    expect(planBlocks(waiting)).toBe(true);
    const plan: InitPlan = { loaded: ["fc.weight"], mismatched: [], new: [], unused: [] };
    expect(planBlocks(apply(waiting, { type: "planChanged", plan }))).toBe(false);
    expect(planBlocks(apply(waiting, { type: "planChanged", plan: { ...plan, problems: ["resume needs the same revision"] } }))).toBe(true);
    expect(startDisabled(apply(ready, { type: "submitting" }))).toBe(true);
    expect(startDisabled(apply(ready, { type: "datasetsLoaded", datasets: [], first: undefined }))).toBe(true);
  });

  it("is busy while starting, and shows the refusal when the server says no", () => {
    const s = apply(fresh(), { type: "initIncomplete" }, { type: "submitting" });
    expect(s).toMatchObject({ busy: true, errors: NO_ERRORS, initErrors: [] });
    const failed = apply(s, { type: "failed", errors: { ...NO_ERRORS, general: ["boom"] }, initErrors: ["checkpoint: gone"] });
    expect(failed).toMatchObject({ busy: false, initErrors: ["checkpoint: gone"] });
    expect(failed.errors.general).toEqual(["boom"]);
  });
});

describe("starting a run", () => {
  const loaded = apply(fresh(), { type: "formLoaded", form, values: form.defaultValues() }, { type: "datasetsLoaded", datasets: [ds(1)], first: ds(1) });

  it("sends the revision, dataset, config and priority", () => {
    expect(startStep(fresh(), 9, null)).toBeNull();
    const s = apply(loaded, { type: "priorityChanged", priority: " 4 " }, { type: "freezeChanged", freeze: ["fc1"] });
    expect(startStep(s, 9, null)).toEqual({ body: { graph: 9, revision: 1, dataset: 1, config: { epochs: 10, freeze: ["fc1"] }, priority: 4 } });
  });

  it("trains a run again on its own split, over its config", () => {
    const s = apply(initialTrainState(3, run(), null), { type: "formLoaded", form, values: { epochs: "6" } }, { type: "freezeChanged", freeze: [] });
    expect(onRunsData(s, run())).toBe(true);
    const step = startStep(s, 1, run());
    expect(step).toEqual({ body: { graph: 1, revision: 3, dataset: 7, config: { epochs: 6 }, split: { val: 0.2 }, priority: 0 } });
    expect(startStep(apply(s, { type: "datasetPicked", datasetId: "8" }), 1, run())).not.toHaveProperty("body.split");
  });

  it("refuses a form with problems, and a checkpoint start without its checkpoint first", () => {
    expect(startStep(apply(loaded, { type: "valueChanged", path: "epochs", value: "x" }), 1, null)).toEqual({ refuse: { type: "refused", fields: { epochs: ["Enter a whole number."] } } });
    expect(startStep(apply(loaded, { type: "datasetPicked", datasetId: "" }), 1, null)).toEqual({ refuse: { type: "refused", fields: { dataset: ["Choose a dataset."] } } });
    const noCheckpoint = apply(loaded, { type: "datasetPicked", datasetId: "" }, { type: "initChanged", init: { run: 5, checkpoint: "", mode: "resume" } });
    expect(startStep(noCheckpoint, 1, null)).toEqual({ refuse: { type: "initIncomplete" } });
  });

  it("puts each part of a 400 next to its section", () => {
    const e = new ApiError(400, "invalid", "Invalid run.", {
      "init.checkpoint": ["gone"],
      priority: ["too high"],
      "config.freeze.0": ["no node fc9"],
      "config.epochs": ["must be positive"],
      "graph.fc1": ["expects 4 features"],
    });
    expect(failedStart(e, form)).toEqual({
      type: "failed",
      initErrors: ["checkpoint: gone"],
      errors: { fields: { epochs: ["must be positive"], freeze: ["no node fc9"], priority: ["too high"] }, graph: ["node fc1: expects 4 features"], general: [] },
    });
    expect(failedStart(new ApiError(400, "invalid", "Invalid run.", {}), form)).toEqual({ type: "failed", initErrors: [], errors: { ...NO_ERRORS, general: ["Invalid run."] } });
    expect(failedStart(new Error("offline"), form)).toEqual({ type: "failed", initErrors: [], errors: { ...NO_ERRORS, general: ["offline"] } });
  });

  it("takes the freeze messages out of a 400's fields", () => {
    const fields: Record<string, unknown> = { "config.freeze": "bad", "config.freeze.1": ["no node x"], "config.epochs": ["y"] };
    expect(takeFreezeErrors(fields)).toEqual(["bad", "no node x"]);
    expect(fields).toEqual({ "config.epochs": ["y"] });
  });

  it("titles the dialog by what starting does, and reads the epochs for a resume", () => {
    expect(dialogTitle(2, null, null)).toBe("Train revision 2");
    expect(dialogTitle(2, null, run())).toBe("Run #5 again");
    expect(dialogTitle(2, { run: 5, checkpoint: "best", mode: "finetune" }, run())).toBe("Fine-tune revision 2");
    expect(dialogTitle(2, { run: 5, checkpoint: "best", mode: "resume" }, run())).toBe("Resume run #5 for more epochs");
    expect(epochsOf({ epochs: " 8" })).toBe(8);
    expect(epochsOf({ epochs: " " })).toBeNull();
    expect(epochsOf({})).toBeNull();
  });
});
