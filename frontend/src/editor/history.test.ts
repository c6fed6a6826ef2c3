import { describe, expect, it } from "vitest";
import { HISTORY_LIMIT, historyInit, historyPush, historyRedo, historyUndo } from "./history";

describe("undo/redo history", () => {
  it("undoes and redoes every change in order", () => {
    let h = historyInit("a");
    h = historyPush(h, "b");
    h = historyPush(h, "c");
    h = historyUndo(h);
    expect(h.present).toBe("b");
    h = historyUndo(h);
    expect(h.present).toBe("a");
    expect(historyUndo(h)).toBe(h);
    h = historyRedo(h);
    h = historyRedo(h);
    expect(h.present).toBe("c");
    expect(historyRedo(h)).toBe(h);
  });

  it("drops the redo branch after a new change", () => {
    let h = historyPush(historyPush(historyInit(1), 2), 3);
    h = historyUndo(h);
    h = historyPush(h, 4);
    expect(h.future).toEqual([]);
    expect(historyUndo(h).present).toBe(2);
  });

  it("coalesces typing into one field into one undo step", () => {
    let h = historyPush(historyInit(""), "x");
    h = historyPush(h, "1", "fc1.out_features");
    h = historyPush(h, "12", "fc1.out_features");
    h = historyPush(h, "128", "fc1.out_features");
    expect(h.present).toBe("128");
    expect(historyUndo(h).present).toBe("x");
  });

  it("starts a new step after an undo even with the same key", () => {
    let h = historyPush(historyPush(historyInit(0), 1, "k"), 2, "k");
    h = historyUndo(h);
    h = historyPush(h, 3, "k");
    expect(historyUndo(h).present).toBe(0);
  });

  it("forgets the oldest steps beyond the limit", () => {
    let h = historyInit(0);
    for (let i = 1; i <= HISTORY_LIMIT + 10; i++) h = historyPush(h, i);
    expect(h.past).toHaveLength(HISTORY_LIMIT);
    expect(h.past[0]).toBe(10);
  });
});
