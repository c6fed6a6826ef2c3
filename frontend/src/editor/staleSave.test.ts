import { describe, expect, it } from "vitest";
import { ApiError, problemOf } from "../api/client";
import { newerThanOpen, parseStaleBase, savedSentence } from "./staleSave";

const body = {
  error: {
    code: "stale_base",
    message: "Revision 5 was saved after revision 4.",
    fields: {},
    latest: {
      number: 5,
      created_by: { id: 2, username: "alice" },
      created_at: "2026-12-01T10:42:00Z",
    },
    base: 4,
  },
};

describe("parseStaleBase", () => {
  it("reads the newer revision, its author and the base out of the 409 body", () => {
    const stale = parseStaleBase(problemOf(409, body, "failed"));
    expect(stale).not.toBeNull();
    expect(stale!.latest).toEqual({
      number: 5,
      author: "alice",
      createdAt: "2026-12-01T10:42:00Z",
    });
    expect(stale!.base).toBe(4);
    expect(stale!.message).toBe("Revision 5 was saved after revision 4.");
  });

  it("accepts the extra data nested under detail and an author given as a plain name", () => {
    const nested = {
      error: {
        code: "stale_base",
        message: "m",
        detail: {
          latest: { number: 7, created_by: "bob", created_at: null },
          base: 6,
        },
      },
    };
    const stale = parseStaleBase(problemOf(409, nested, "failed"));
    expect(stale?.latest).toEqual({
      number: 7,
      author: "bob",
      createdAt: null,
    });
    expect(stale?.base).toBe(6);
  });

  it("is null for other errors", () => {
    expect(parseStaleBase(problemOf(400, { error: { code: "invalid", message: "bad" } }, "x"))).toBeNull();
    expect(parseStaleBase(problemOf(409, { error: { code: "conflict", message: "busy" } }, "x"))).toBeNull();
    expect(parseStaleBase(new ApiError(409, "stale_base", "no latest"))).toBeNull();
    expect(parseStaleBase(new Error("network"))).toBeNull();
  });
});

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
