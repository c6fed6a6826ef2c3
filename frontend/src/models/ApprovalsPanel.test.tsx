import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { ApprovalsPanel, approveBlocked } from "./ApprovalsPanel";
import type { AliasApproval } from "./api";

const request = (over: Partial<AliasApproval> = {}): AliasApproval => ({
  id: 7, alias: "production", version: 2, from_version: 1, current_version: 1, note: "faster", status: "pending",
  stale: false, requested_by: "ed", decided_by: null, created_at: "2026-01-01T00:00:00Z", decided_at: null, ...over,
});

describe("the requests waiting for approval", () => {
  it("lets another admin approve, never the one who asked, an editor or a stale request", () => {
    expect(approveBlocked(request(), "alice", true)).toBeNull();
    expect(approveBlocked(request(), "ed", true)).toBe("You asked for this move: another admin approves it");
    expect(approveBlocked(request(), "eve", false)).toBe("Only a team admin approves production moves");
    expect(approveBlocked(request({ stale: true }), "alice", true)).toBe("production moved since this request; ask again");
  });

  it("names who asks for which move, with the buttons each person may use", () => {
    const own = renderToStaticMarkup(<ApprovalsPanel approvals={[request()]} me="ed" isAdmin={false} onDecide={() => undefined} />);
    expect(own).toContain("ed asks to move production v1 → v2: faster");
    expect(own).toMatch(/<button[^>]*disabled=""[^>]*title="You asked for this move: another admin approves it"[^>]*>Approve/);
    expect(own).toContain(">Withdraw</button>");
    const admin = renderToStaticMarkup(<ApprovalsPanel approvals={[request()]} me="alice" isAdmin onDecide={() => undefined} />);
    expect(admin).not.toMatch(/disabled=""[^>]*data-testid="approve-7"/);
    expect(admin).toContain(">Reject</button>");
    expect(renderToStaticMarkup(<ApprovalsPanel approvals={[]} me="a" isAdmin onDecide={() => undefined} />)).toBe("");
  });
});
