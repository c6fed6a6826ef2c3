import { describe, expect, it } from "vitest";
import { balanceRows, diffHeadline, statisticLines, versionLabel, type VersionDiff } from "./versions";

const base: VersionDiff = {
  from: { number: 1, digest: "a".repeat(64) },
  to: { number: 2, digest: "b".repeat(64) },
  same_bytes: false,
  kind: "table",
  key: null,
  rows: { before: 60, after: 55, added: 0, removed: 5, changed: null, unchanged: 55 },
  statistics: {
    sepal_length: {
      before: { type: "numeric", count: 60, missing: 0, distinct: 12, mean: 6.05, std: 0.8 },
      after: { type: "numeric", count: 55, missing: 0, distinct: 12, mean: 6.0, std: 0.8 },
    },
    species: {
      before: { type: "text", count: 60, missing: 0, distinct: 3 },
      after: { type: "text", count: 60, missing: 0, distinct: 3 },
    },
  },
  class_balance: { column: "species", before: { setosa: 20, virginica: 20 }, after: { setosa: 18, versicolor: 2 } },
};

describe("dataset version diffs as the browser shows them", () => {
  it("says five rows removed", () => {
    expect(diffHeadline(base)).toBe("5 rows removed");
  });
  it("names the key of changed rows and counts each kind", () => {
    const keyed = { ...base, key: "id", rows: { ...base.rows!, added: 1, removed: 2, changed: 3 } };
    expect(diffHeadline(keyed)).toBe("1 row added, 2 rows removed, 3 rows changed (by id)");
  });
  it("speaks of files for archives and of nothing when nothing changed", () => {
    const archive: VersionDiff = { ...base, kind: "archive", rows: undefined, files: { before: 3, after: 3, added: 0, removed: 0, changed: 1, unchanged: 2 } };
    expect(diffHeadline(archive)).toBe("1 file changed");
    expect(diffHeadline({ ...base, rows: { ...base.rows!, removed: 0 } })).toBe("no row changed");
  });
  it("lists only the statistics that moved", () => {
    expect(statisticLines(base)).toEqual(["sepal_length: count 60 → 55, mean 6.050 → 6"]);
  });
  it("lines classes up before and after", () => {
    expect(balanceRows(base)).toEqual([
      { name: "setosa", before: 20, after: 18 },
      { name: "virginica", before: 20, after: 0 },
      { name: "versicolor", before: 0, after: 2 },
    ]);
  });
  it("labels a version with its short digest", () => {
    expect(versionLabel({ number: 2, digest: "0123456789abcdef" })).toBe("v2 · 0123456789ab");
  });
});
