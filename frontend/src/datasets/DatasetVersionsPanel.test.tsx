import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { DiffView } from "./DatasetVersionsPanel";
import type { VersionDiff } from "./versions";

const diff: VersionDiff = {
  from: { number: 1, digest: "a".repeat(64) },
  to: { number: 2, digest: "b".repeat(64) },
  same_bytes: false,
  kind: "table",
  key: null,
  rows: { before: 60, after: 55, added: 0, removed: 5, changed: null, unchanged: 55 },
  examples: { added: [], removed: [{ sepal_length: "5.0", species: "setosa" }], changed: [] },
  columns: { added: ["score"], removed: [], retyped: [{ column: "grade", before: "numeric", after: "text" }] },
  statistics: {
    sepal_length: {
      before: { type: "numeric", count: 60, missing: 0, distinct: 12, mean: 6.05, std: 0.8 },
      after: { type: "numeric", count: 55, missing: 0, distinct: 12, mean: 6.05, std: 0.8 },
    },
  },
  class_balance: { column: "species", before: { setosa: 20 }, after: { setosa: 15 } },
};

describe("the diff of two dataset versions", () => {
  it("shows the rows removed, the columns, the statistics and the class balance", () => {
    const html = renderToStaticMarkup(<DiffView diff={diff} />);
    expect(html).toContain("5 rows removed");
    expect(html).toContain("(60 → 55 rows)");
    expect(html).toContain("Columns added: score");
    expect(html).toContain("grade: numeric → text");
    expect(html).toContain("sepal_length: count 60 → 55");
    expect(html).toContain("Class balance (species)");
    expect(html).toMatch(/<td>setosa<\/td><td>20<\/td><td>15<\/td>/);
    expect(html).toContain("removed (first 1)");
  });
});
