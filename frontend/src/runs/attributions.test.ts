import { describe, expect, it } from "vitest";
import { attributionsByColumn, columnOf, flatAttributions } from "./attributions";

describe("attributionsByColumn", () => {
  const names = ["age", "colour=blue", "colour=green", "colour=red", "score", "score (missing)"];
  const values = [0.5, -0.1, 0.2, 0.4, -0.3, 0.05];

  it("sums one-hot columns and missing indicators back into their column, keeping the parts", () => {
    const got = attributionsByColumn(names, values, ["id", "age", "colour", "score", "label"]);
    expect(got.map((c) => c.column)).toEqual(["age", "colour", "score"]);
    expect(got[1].total).toBeCloseTo(0.5);
    expect(got[1].parts).toEqual([
      { feature: "colour=blue", value: -0.1 },
      { feature: "colour=green", value: 0.2 },
      { feature: "colour=red", value: 0.4 },
    ]);
    expect(got[2].total).toBeCloseTo(-0.25);
    expect(got[0]).toEqual({ column: "age", total: 0.5, parts: [{ feature: "age", value: 0.5 }] });
  });

  it("guesses the column from the name=category pattern when the columns are not known", () => {
    expect(attributionsByColumn(names, values).map((c) => c.column)).toEqual(["age", "colour", "score"]);
  });

  it("keeps a column whose own name holds '='", () => {
    expect(columnOf("a=b=x", new Set(["a=b"]))).toBe("a=b");
    expect(columnOf("petal width", new Set(["petal width"]))).toBe("petal width");
  });
});

describe("flatAttributions", () => {
  it("flattens [1, n] and [n] shapes", () => {
    expect(flatAttributions([[1, 2, 3]])).toEqual([1, 2, 3]);
    expect(flatAttributions([4, 5])).toEqual([4, 5]);
    expect(flatAttributions(null)).toEqual([]);
  });
});
