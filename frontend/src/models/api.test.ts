import { describe, expect, it } from "vitest";
import { BASE, parseRoute } from "../router";
import { figuresAgainst, versionFigures } from "./api";

describe("model figures", () => {
  it("keeps validation and test numbers, sorted", () => {
    expect(versionFigures({ "val/loss": 0.3, "train/loss": 0.1, "test/accuracy": 0.9, "val/x": [1] })).toEqual([
      ["test/accuracy", 0.9],
      ["val/loss", 0.3],
    ]);
  });
  it("sets each figure beside the version it replaces (none: null)", () => {
    expect(figuresAgainst({ "val/accuracy": 0.95, "val/loss": 0.2 }, { "val/accuracy": 0.9 })).toEqual([
      ["val/accuracy", 0.9, 0.95],
      ["val/loss", null, 0.2],
    ]);
    expect(figuresAgainst({ "val/accuracy": 0.95 }, null)).toEqual([["val/accuracy", null, 0.95]]);
  });
  it("routes /models and /models/<id>", () => {
    expect(parseRoute(BASE + "/models")).toEqual({ page: "models" });
    expect(parseRoute(BASE + "/models/7/")).toEqual({ page: "model", modelId: 7 });
  });
});
