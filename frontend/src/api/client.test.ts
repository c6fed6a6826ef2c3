import { describe, expect, it } from "vitest";
import { ApiError, problemOf } from "./client";

describe("the one HTTP client's errors", () => {
  it("keep code, message, fields and the server's whole error object", () => {
    const e = problemOf(400, { error: { code: "invalid_dataset", message: "row 3: not a number", fields: { file: ["bad"] }, detail: { row: 3 } } }, "fallback");
    expect(e).toBeInstanceOf(ApiError);
    expect([e.status, e.code, e.message]).toEqual([400, "invalid_dataset", "row 3: not a number"]);
    expect(e.fields).toEqual({ file: ["bad"] });
    expect(e.body.detail).toEqual({ row: 3 });
  });

  it("fall back to DRF's detail, then to the given message", () => {
    expect(problemOf(403, { detail: "Not allowed." }, "x").message).toBe("Not allowed.");
    const bare = problemOf(502, null, "GET /api/runs/ failed (502)");
    expect([bare.code, bare.message, bare.fields]).toEqual(["http_502", "GET /api/runs/ failed (502)", null]);
  });
});
