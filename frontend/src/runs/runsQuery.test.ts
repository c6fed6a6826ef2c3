import { describe, expect, it } from "vitest";
import { NO_FILTERS, errorColumn, runsQuery } from "./runsQuery";
import { DEFAULT_SORT } from "./runsTable";

describe("the runs page's query", () => {
  it("asks the server with only the filters that are set, its ordering and the page", () => {
    expect(runsQuery(3, NO_FILTERS, DEFAULT_SORT)).toBe("team=3&page_size=100&ordering=-created_at");
    expect(
      runsQuery(
        3,
        { status: "failed", graph: 4, dataset: 5, tag: " lr sweep ", q: "wide", filter: " metrics.val/accuracy > 0.9 " },
        { column: "best.val/loss", direction: "asc" },
        2,
      ),
    ).toBe(
      "team=3&page_size=100&page=2&status=failed&graph=4&dataset=5&tag=lr+sweep&q=wide&filter=metrics.val%2Faccuracy+%3E+0.9&ordering=best.val%2Floss",
    );
    expect(runsQuery(3, NO_FILTERS, DEFAULT_SORT, 1, 7)).toBe("team=3&page_size=7&ordering=-created_at");
  });

  it("reads the column of a filter error, kept within the expression", () => {
    expect(errorColumn({ column: 23 }, "metrics.val/accuracy >")).toBe(23);
    expect(errorColumn({ column: 99 }, "abc")).toBe(4);
    expect(errorColumn({}, "abc")).toBeNull();
    expect(errorColumn(undefined, "abc")).toBeNull();
  });
});
