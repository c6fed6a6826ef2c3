import { beforeAll, describe, expect, it } from "vitest";
import { type ConfigForm, type TrainConfigSchema, checkValue, configForm, configOver, mapServerErrors, parseClassWeights, schemaAt, valuesFromConfig, withValue } from "./configForm";

// What GET /api/runs/config-schema/ serves, made by the engine itself (no copy of the schema here).
const ENGINE_SCHEMA = `import json
from engine.train import TrainConfig
print(json.dumps({"schema": TrainConfig.model_json_schema(), "defaults": TrainConfig().model_dump(mode="json")}))`;

let answer: TrainConfigSchema;
let form: ConfigForm;
const field = (path: string) => form.fields.find((f) => f.path === path)!;
const defaultValues = (o?: Record<string, string | boolean>) => form.defaultValues(o);
const buildConfig = (v: Record<string, string | boolean>) => form.buildConfig(v);

type ExecFileSync = (file: string, args: string[], options: { cwd: string; encoding: "utf8" }) => string;

beforeAll(async () => {
  // Node's child_process, imported by name (the app's types leave Node out on purpose).
  const childProcess = "node:child_process";
  const { execFileSync } = (await import(/* @vite-ignore */ childProcess)) as { execFileSync: ExecFileSync };
  const root = decodeURIComponent(new URL("../../../", import.meta.url).pathname);
  const out = execFileSync(`${root}.venv/bin/python`, ["-c", ENGINE_SCHEMA], { cwd: root, encoding: "utf8" });
  answer = JSON.parse(out) as TrainConfigSchema;
  form = configForm(answer);
}, 60_000);

describe("config form", () => {
  it("takes kinds, bounds, choices and defaults from the engine's schema", () => {
    expect(field("epochs")).toMatchObject({ kind: "int", min: 1, max: 100000 });
    expect(field("optimizer.lr")).toMatchObject({ kind: "float", min: 0, minExclusive: true, max: 10 });
    expect(field("optimizer.name").choices).toEqual(["sgd", "adam", "adamw", "rmsprop"]);
    expect(field("precision").choices).toContain("bf16");
    expect(schemaAt(answer.schema, "early_stopping.patience")).toMatchObject({ type: "integer", minimum: 1 });
    expect(defaultValues()).toMatchObject({ epochs: "10", batch_size: "32", "optimizer.name": "adam", "optimizer.lr": "0.001" });
  });

  it("builds a nested config from the shown fields only", () => {
    const values = defaultValues({ epochs: "3", "optimizer.lr": "0.01", "early_stopping.enabled": true, "early_stopping.metric": "val/accuracy" });
    const { config, errors } = buildConfig(values);
    expect(errors).toEqual({});
    expect(config).toMatchObject({ epochs: 3, optimizer: { name: "adam", lr: 0.01 }, early_stopping: { metric: "val/accuracy", mode: "max", patience: 5 } });
    expect((config.optimizer as Record<string, unknown>).momentum).toBeUndefined(); // adam: not shown
    expect(buildConfig(defaultValues()).config.early_stopping).toBeUndefined();
  });

  it("checks values against the schema before asking the server", () => {
    expect(checkValue(field("epochs"), "0")).toBe("Must be at least 1 and at most 100000.");
    expect(checkValue(field("epochs"), "2.5")).toBe("Must be a whole number.");
    expect(checkValue(field("optimizer.lr"), "0")).toMatch(/greater than 0/);
    expect(checkValue(field("batch_size"), "")).toBe("Required.");
    expect(buildConfig(defaultValues({ batch_size: "x" })).errors).toEqual({ batch_size: ["Must be a number."] });
  });

  it("maps the server's 400 fields onto form fields, the graph and the rest", () => {
    const mapped = mapServerErrors(
      {
      "config.optimizer.lr": ["Input should be greater than 0"],
      "config.epochs": ["Input should be greater than or equal to 1"],
      "config.optimizer": ["Value error, nesterov needs optimizer 'sgd' with momentum > 0"],
      "config.config": ["loss is for regression"],
      "graph.x": ["input shape [5] does not match the dataset's feature shape [4]"],
      graph: ["a run trains one output, but the graph has 2"],
      dataset: ["Dataset is processing, not ready."],
      "split.val": ["Input should be less than 1"],
      },
      form.fields.map((f) => f.path),
    );
    expect(mapped.fields).toEqual({
      "optimizer.lr": ["Input should be greater than 0"],
      epochs: ["Input should be greater than or equal to 1"],
      dataset: ["Dataset is processing, not ready."],
    });
    expect(mapped.graph).toEqual([
      "node x: input shape [5] does not match the dataset's feature shape [4]",
      "a run trains one output, but the graph has 2",
    ]);
    expect(mapped.general).toEqual([
      "optimizer: Value error, nesterov needs optimizer 'sgd' with momentum > 0",
      "loss is for regression",
      "split.val: Input should be less than 1",
    ]);
  });

  it("has the experiment fields: best checkpoint policy, accumulation, smoothing, warm-up, class weights", () => {
    expect(field("best.metric")).toMatchObject({ kind: "choice", choiceLabels: { "": "automatic" } });
    expect(field("best.mode").choices).toEqual(["min", "max"]);
    expect(field("grad_accumulation")).toMatchObject({ kind: "int", min: 1 });
    expect(field("label_smoothing")).toMatchObject({ kind: "float", min: 0, max: 1, maxExclusive: true });
    expect(field("scheduler.warmup_steps")).toMatchObject({ kind: "int", min: 0 });
    expect(field("class_weights").kind).toBe("text");
    expect(defaultValues()).toMatchObject({ "best.metric": "", class_weights: "", grad_accumulation: "1", label_smoothing: "0", "scheduler.warmup_steps": "0" });
    // Defaults: no `best`, no class weights (the engine decides).
    const plain = buildConfig(defaultValues()).config;
    expect(plain.best).toBeUndefined();
    expect(plain.class_weights).toBeUndefined();
    expect(plain).toMatchObject({ grad_accumulation: 1, label_smoothing: 0, scheduler: { warmup_steps: 0 } });
    const picked = withValue(defaultValues({ class_weights: "1, 2 ,0.5", grad_accumulation: "4" }), "best.metric", "val/accuracy");
    expect(picked["best.mode"]).toBe("max");
    expect(buildConfig(picked)).toEqual({
      config: expect.objectContaining({ best: { metric: "val/accuracy", mode: "max" }, class_weights: [1, 2, 0.5], grad_accumulation: 4 }),
      errors: {},
    });
    expect(buildConfig(defaultValues({ class_weights: "Balanced" })).config.class_weights).toBe("balanced");
    expect(buildConfig(defaultValues({ class_weights: "lots" })).errors).toEqual({ class_weights: ["Write balanced, or one weight (a number, 0 or more) per class."] });
    expect(parseClassWeights("")).toEqual({ value: null });
  });

  it("fills the form from a run's config for Run again, and lays the form back over it", () => {
    const runConfig = {
      ...answer.defaults,
      epochs: 7,
      optimizer: { ...(answer.defaults.optimizer as object), name: "sgd", lr: 0.05, momentum: 0.8 },
      early_stopping: { metric: "val/accuracy", mode: "max", patience: 3, min_delta: 0 },
      best: { metric: "val/accuracy", mode: "max" },
      class_weights: "balanced",
      keep_checkpoints: 9,
      freeze: ["conv1"],
    };
    const values = valuesFromConfig(form, runConfig);
    expect(values).toMatchObject({
      epochs: "7",
      "optimizer.name": "sgd",
      "optimizer.lr": "0.05",
      "optimizer.momentum": "0.8",
      "early_stopping.enabled": true,
      "early_stopping.metric": "val/accuracy",
      "early_stopping.patience": "3",
      "best.metric": "val/accuracy",
      "best.mode": "max",
      class_weights: "balanced",
    });
    expect(valuesFromConfig(form, { ...answer.defaults, class_weights: [1, 3] }).class_weights).toBe("1, 3");
    // Unchanged form: the same config back (fields the form does not show kept as they were).
    const again = configOver(runConfig, buildConfig(values).config, form, values);
    expect(again).toMatchObject({ epochs: 7, keep_checkpoints: 9, freeze: ["conv1"], class_weights: "balanced", early_stopping: { metric: "val/accuracy", patience: 3 } });
    // Early stopping and best turned off, weights cleared: they go back to the engine's defaults.
    const off = { ...values, "early_stopping.enabled": false, "best.metric": "", class_weights: "" };
    const cleared = configOver(runConfig, buildConfig(off).config, form, off);
    expect(cleared.early_stopping).toBeUndefined();
    expect(cleared.best).toBeUndefined();
    expect(cleared.class_weights).toBeUndefined();
    expect(cleared.keep_checkpoints).toBe(9);
  });
});
