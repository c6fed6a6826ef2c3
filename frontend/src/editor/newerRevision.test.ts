import { describe, expect, it } from "vitest";
import { newerThanOpen, savedSentence } from "./newerRevision";

describe("savedSentence / newerThanOpen", () => {
  it("names who saved which revision, and when", () => {
    const s = savedSentence({ number: 5, author: "alice", createdAt: "2026-12-01T10:42:00Z" }, "en-GB");
    expect(s).toMatch(/^alice saved revision 5 at \d\d:\d\d$/);
    expect(savedSentence({ number: 3, author: "", createdAt: null })).toBe("Someone saved revision 3");
  });

  it("tells only when the latest revision moved past the open one", () => {
    const latest = {
      number: 5,
      created_by: { username: "alice" },
      created_at: "2026-12-01T10:42:00Z",
    };
    expect(newerThanOpen({ latest_revision: 5, latest }, 4)?.author).toBe("alice");
    expect(newerThanOpen({ latest_revision: 5, latest }, 5)).toBeNull();
    expect(newerThanOpen({ latest_revision: null }, null)).toBeNull();
    expect(newerThanOpen({ latest_revision: 1 }, null)).toEqual({
      number: 1,
      author: "",
      createdAt: null,
    });
  });
});
