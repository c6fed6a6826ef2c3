import { describe, expect, it } from "vitest";
import { NO_FILTERS, auditQuery, changeText, objectText } from "./audit";

describe("auditQuery", () => {
  it("sends only the filters that are set, dates as since/until", () => {
    expect(auditQuery(NO_FILTERS)).toBe("");
    expect(auditQuery({ ...NO_FILTERS, actor: " alice ", action: "member.", from: "2026-01-01", to: "2026-01-31" }, { page: "2" })).toBe(
      "actor=alice&action=member.&since=2026-01-01&until=2026-01-31&page=2",
    );
    expect(auditQuery({ ...NO_FILTERS, object: "run:42" })).toBe("object=run%3A42");
  });
});

describe("changeText", () => {
  it("shows only what changed", () => {
    expect(changeText({ role: "editor" }, { role: "viewer" })).toBe("role: editor → viewer");
    expect(changeText({ name: "a", kind: "csv" }, { name: "b", kind: "csv" })).toBe("name: a → b");
    expect(changeText({ status: "running" }, { status: "running", cancel_requested: true })).toBe("cancel_requested: — → true");
  });
  it("lists what a creation was made with and what a deletion had", () => {
    expect(changeText(null, { name: "mlp", note: "" })).toBe("name: mlp");
    expect(changeText({ name: "mlp" }, null)).toBe("was name: mlp");
    expect(changeText(null, null)).toBe("");
  });
});

describe("objectText", () => {
  it("names the object once", () => {
    expect(objectText({ object_type: "run", object_id: "42", object_repr: "first" })).toBe("run 42 (first)");
    expect(objectText({ object_type: "run", object_id: "42", object_repr: "run 42" })).toBe("run 42");
  });
});

describe("the route", () => {
  it("opens the audit page at <base>/audit", async () => {
    const { BASE, parseRoute } = await import("../router");
    expect(parseRoute(`${BASE}/audit`)).toEqual({ page: "audit" });
    expect(parseRoute(`${BASE}/audit/`)).toEqual({ page: "audit" });
  });
});
