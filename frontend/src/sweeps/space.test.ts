import { describe, expect, it } from "vitest";
import type { NodeSpec, OpSchema } from "../api/types";
import type { ConfigField } from "../runs/configForm";
import { type SpaceRow, configKeyOptions, emptyRow, mapSweepErrors, nodeKeyOptions, parseChoice, rowsFromSpace, spaceFromRows } from "./space";

const row = (patch: Partial<SpaceRow>): SpaceRow => ({ ...emptyRow(), ...patch });

describe("the search space form", () => {
  it("turns rows into the space JSON of POST /api/sweeps/", () => {
    const { space, errors } = spaceFromRows([
      row({ key: "optimizer.lr", type: "float", low: "0.0001", high: "0.1", log: true }),
      row({ key: "nodes.fc1.out_features", type: "categorical", choices: "64, 128,256" }),
      row({ key: "epochs", type: "int", low: "2", high: "8", step: "2" }),
      row({ key: "optimizer.name", type: "categorical", choices: "adam, sgd" }),
    ]);
    expect(errors).toEqual({});
    expect(space).toEqual({
      "optimizer.lr": { type: "float", low: 0.0001, high: 0.1, log: true },
      "nodes.fc1.out_features": { type: "categorical", choices: [64, 128, 256] },
      epochs: { type: "int", low: 2, high: 8, step: 2, log: false },
      "optimizer.name": { type: "categorical", choices: ["adam", "sgd"] },
    });
    expect(rowsFromSpace(space)).toEqual([
      row({ key: "optimizer.lr", type: "float", low: "0.0001", high: "0.1", log: true }),
      row({ key: "nodes.fc1.out_features", type: "categorical", choices: "64, 128, 256" }),
      row({ key: "epochs", type: "int", low: "2", high: "8", step: "2" }),
      row({ key: "optimizer.name", type: "categorical", choices: "adam, sgd" }),
    ]);
  });

  it("types choices: numbers, booleans, null, text", () => {
    expect([" 3 ", "0.5", "true", "false", "null", "relu"].map(parseChoice)).toEqual([3, 0.5, true, false, null, "relu"]);
  });

  it("names each row's problem at its part", () => {
    const { space, errors } = spaceFromRows([
      row({ key: "", type: "float", low: "1", high: "2" }),
      row({ key: "optimizer.lr", type: "float", low: "0", high: "0.1", log: true }),
      row({ key: "epochs", type: "int", low: "5", high: "3", step: "0" }),
      row({ key: "batch_size", type: "categorical", choices: "16, 16" }),
      row({ key: "optimizer.lr", type: "float", low: "x", high: "1" }),
    ]);
    expect(space).toEqual({});
    expect(errors).toEqual({
      0: { key: ["Choose a config field or a node's parameter."] },
      1: { low: ["A log scale starts above 0."] },
      2: { high: ["Must be above the low end."], step: ["A whole number, 1 or more."] },
      3: { choices: ["A choice is listed twice."] },
      4: { key: ["This key is searched twice."], low: ["Must be a number."] },
    });
  });

  it("offers the config's numbers and choices and the graph's node parameters as keys", () => {
    const fields: ConfigField[] = [
      { path: "optimizer.lr", label: "Learning rate", kind: "float", min: 0, max: 10 },
      { path: "optimizer.name", label: "Optimizer", kind: "choice", choices: ["sgd", "adam"] },
      { path: "early_stopping.enabled", label: "Early stopping", kind: "bool" },
      { path: "class_weights", label: "Class weights", kind: "text" },
    ];
    const config = configKeyOptions(fields);
    expect(config.map((o) => o.key)).toEqual(["optimizer.lr", "optimizer.name"]);
    expect(config[0].row).toMatchObject({ type: "float", low: "0.0001", high: "0.1", log: true });
    expect(config[1].row).toMatchObject({ type: "categorical", choices: "sgd, adam" });

    const ops = [
      { name: "Linear", params: [{ name: "out_features", type: "int", min: 1 }, { name: "bias", type: "bool" }] },
      { name: "Dropout", params: [{ name: "p", type: "float", min: 0, max: 1 }] },
      { name: "Flatten", params: [] },
    ] as unknown as OpSchema[];
    const nodes: NodeSpec[] = [
      { id: "flat", op: "Flatten", inputs: ["x"] },
      { id: "fc1", op: "Linear", params: { out_features: 64 }, inputs: ["flat"] },
      { id: "drop", op: "Dropout", params: { p: 0.2 }, inputs: ["fc1"] },
    ];
    const byKey = Object.fromEntries(nodeKeyOptions(nodes, ops).map((o) => [o.key, o]));
    expect(Object.keys(byKey)).toEqual(["nodes.fc1.out_features", "nodes.fc1.bias", "nodes.drop.p"]);
    expect(byKey["nodes.fc1.out_features"].row).toMatchObject({ type: "categorical", choices: "32, 64, 128" });
    expect(byKey["nodes.fc1.out_features"].label).toBe("fc1.out_features (Linear)");
    expect(byKey["nodes.drop.p"].row).toMatchObject({ type: "float", low: "0", high: "1" });
  });

  it("shows the server's 400 fields at the row, the form field or the base config they name", () => {
    const rows = [row({ key: "optimizer" }), row({ key: "optimizer.lr" }), row({ key: "nodes.fc1.out_features" })];
    const mapped = mapSweepErrors(
      {
        "space.optimizer.lr.low": ["must be > 0"],
        "space.nodes.fc1.out_features": ["trial graph invalid: fc1 out_features 0"],
        "space.nodes.nope.p": ["no node nope"],
        space: ["grid needs every dimension discrete"],
        budget: ["Ensure this value is less than or equal to 500."],
        "objective.metric": ["unknown metric"],
        "config.epochs": ["Input should be greater than or equal to 1"],
        "config.loss": ["loss is for regression"],
        "graph.x": ["input shape [5] does not match"],
      },
      rows,
      ["name", "budget", "objective", "space"],
      ["epochs"],
    );
    expect(mapped.rows).toEqual({ 1: { low: ["must be > 0"] }, 2: { key: ["trial graph invalid: fc1 out_features 0"] } });
    expect(mapped.form).toEqual({
      space: ["nodes.nope.p: no node nope", "grid needs every dimension discrete"],
      budget: ["Ensure this value is less than or equal to 500."],
      objective: ["objective.metric: unknown metric"],
    });
    expect(mapped.config).toEqual({ epochs: ["Input should be greater than or equal to 1"] });
    expect(mapped.graph).toEqual(["node x: input shape [5] does not match"]);
    expect(mapped.general).toEqual(["config.loss: loss is for regression"]);
  });
});
