import { describe, expect, it } from "vitest";
import { fieldErrors, predictFields, rowOf, valuesOf } from "./predictForm";
import type { DatasetSummary } from "./types";

const summary = {
  task: "classification",
  feature_names: ["age", "colour=blue", "colour=green", "colour=red", "size", "score", "score (missing)"],
  columns: [
    { name: "id", kind: "numeric", role: "id" },
    { name: "age", kind: "numeric", role: "feature" },
    { name: "colour", kind: "categorical", role: "feature" },
    { name: "size", kind: "categorical", role: "feature" },
    { name: "score", kind: "numeric", role: "feature" },
    { name: "label", kind: "categorical", role: "target" },
  ],
} as unknown as DatasetSummary;

describe("predictFields", () => {
  it("makes one field per feature column, with the one-hot categories as choices", () => {
    expect(predictFields(summary)).toEqual([
      { name: "age", kind: "number", categories: [] },
      { name: "colour", kind: "category", categories: ["blue", "green", "red"] },
      { name: "size", kind: "category", categories: [] },
      { name: "score", kind: "number", categories: [] },
    ]);
  });

  it("follows the run recipe's features when it names them", () => {
    const recipe = { source: { features: ["score", "colour"] } };
    expect(predictFields(summary, recipe).map((f) => f.name)).toEqual(["score", "colour"]);
  });

  it("has no fields for data without columns (images)", () => {
    expect(predictFields({ feature_shape: [1, 8, 8] } as DatasetSummary)).toEqual([]);
    expect(predictFields(null)).toEqual([]);
  });
});

describe("rowOf / valuesOf", () => {
  const fields = predictFields(summary);

  it("sends numbers as numbers, categories as text and an empty box as a blank cell", () => {
    expect(rowOf(fields, { age: " 42 ", colour: "red", size: "M", score: "" })).toEqual({ age: 42, colour: "red", size: "M", score: null });
  });

  it("keeps text typed into a number box as text, for the server to name the field", () => {
    expect(rowOf(fields, { age: "old" }).age).toBe("old");
  });

  it("turns a raw sample back into the form's values", () => {
    expect(valuesOf(fields, { age: 30, colour: null, size: "S", score: 1.5, label: "yes" })).toEqual({ age: "30", colour: "", size: "S", score: "1.5" });
  });
});

describe("fieldErrors", () => {
  it("puts input.<column> messages on the column's field", () => {
    expect(fieldErrors({ "input.colour": ["unknown category 'purple'"], image: ["not an image"] })).toEqual({
      colour: "unknown category 'purple'",
      image: "not an image",
    });
    expect(fieldErrors(null)).toEqual({});
  });
});
