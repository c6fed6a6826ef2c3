import { describe, expect, it } from "vitest";
import { BASE, parseRoute } from "../router";
import { type ApiToken, type Member, inviteTarget, leavesNoAdmin, tokenState } from "./api";

const members: Member[] = [
  { id: 1, username: "alice", role: "admin" },
  { id: 2, username: "nora", role: "editor" },
];

describe("team pages", () => {
  it("routes the team, invitation and profile pages", () => {
    expect(parseRoute(BASE + "/teams/3")).toEqual({ page: "team", teamId: 3 });
    expect(parseRoute(BASE + "/invitations/nli_ab-C_9/")).toEqual({ page: "invitation", token: "nli_ab-C_9" });
    expect(parseRoute(BASE + "/profile")).toEqual({ page: "profile" });
    expect(parseRoute(BASE + "/invitations/a/b")).toEqual({ page: "missing" });
  });

  it("invites by e-mail when the text has an @, else by username", () => {
    expect(inviteTarget(" nora@example.org ")).toEqual({ email: "nora@example.org" });
    expect(inviteTarget("nora")).toEqual({ username: "nora" });
  });

  it("knows when a change would leave the team no admin", () => {
    expect(leavesNoAdmin(members, members[0], "editor")).toBe(true);
    expect(leavesNoAdmin(members, members[0], null)).toBe(true);
    expect(leavesNoAdmin(members, members[0], "admin")).toBe(false);
    expect(leavesNoAdmin(members, members[1], null)).toBe(false);
    const two = [...members, { id: 3, username: "sam", role: "admin" } as Member];
    expect(leavesNoAdmin(two, two[0], "viewer")).toBe(false);
  });

  it("names a token's state", () => {
    const base = { id: 1, name: "t", prefix: "nl_abc", created_at: "2026-01-01T00:00:00Z", last_used_at: null } as unknown as ApiToken;
    const now = new Date("2026-06-01T00:00:00Z");
    expect(tokenState({ ...base, expires_at: null, revoked_at: null }, now)).toBe("live");
    expect(tokenState({ ...base, expires_at: "2026-02-01T00:00:00Z", revoked_at: null }, now)).toBe("expired");
    expect(tokenState({ ...base, expires_at: null, revoked_at: "2026-03-01T00:00:00Z" }, now)).toBe("revoked");
  });
});
