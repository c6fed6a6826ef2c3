import { describe, expect, it } from "vitest";
import {
  chosenFeatures,
  columnFacts,
  describeStrategy,
  optionsPatch,
  progressLabel,
  strategiesFor,
  suggestedFeatures,
} from "./columnOptions";

const dataset = {
  options: { target: "label" } as Record<string, unknown>,
  summary: {
    columns: [
      { name: "customer_id", kind: "numeric", missing: 0, role: "feature", id_like: true, missing_strategy: "median", missing_fill: 1099.5 },
      { name: "age", kind: "numeric", missing: 4, role: "feature", missing_strategy: "median", missing_fill: 41.5 },
      { name: "city", kind: "categorical", missing: 3, role: "feature", missing_strategy: "category", missing_fill: "(missing)" },
      { name: "label", kind: "categorical", missing: 0, role: "target", missing_strategy: "fail" },
    ],
  },
};

describe("the column chooser of a CSV", () => {
  it("reads each column's gaps, strategy, fill and whether it looks like an identifier", () => {
    const facts = columnFacts(dataset);
    expect(facts.map((c) => [c.name, c.missing, c.strategy, c.idLike])).toEqual([
      ["customer_id", 0, "median", true],
      ["age", 4, "median", false],
      ["city", 3, "category", false],
      ["label", 0, "fail", false],
    ]);
    expect(describeStrategy(facts[1])).toBe("fill with the median (41.5)");
    expect(describeStrategy(facts[2])).toBe('keep "(missing)" as its own category');
  });

  it("offers only the strategies that fit the column", () => {
    const [, age, city, label] = columnFacts(dataset);
    expect(strategiesFor(age)).toContain("mean");
    expect(strategiesFor(city)).not.toContain("mean");
    expect(strategiesFor(label)).toEqual(["fail", "drop_row"]);
  });

  it("leaves identifiers out of the suggested features and sends features in file order", () => {
    expect(suggestedFeatures(dataset, "label")).toEqual(["age", "city"]);
    expect(chosenFeatures(dataset)).toEqual(["customer_id", "age", "city"]);
    const patch = optionsPatch(dataset, new Set(["city", "age"]), { age: { strategy: "mean", indicator: true }, city: { strategy: "drop_row" } });
    expect(patch).toEqual({ features: ["age", "city"], missing: { age: { strategy: "mean", indicator: true }, city: "drop_row" } });
  });

  it("says how far processing has read the file", () => {
    expect(progressLabel({ status: "processing", progress: 0.424 })).toBe("42% read");
    expect(progressLabel({ status: "processing", progress: null })).toBe("queued");
    expect(progressLabel({ status: "ready", progress: 1 })).toBeNull();
  });
});
