// Requests to move production waiting for a second admin: who asked, from which version to which,
// the note, and Approve / Reject for the people who may (another admin approves; an admin or the
// one who asked rejects). A request whose alias moved since is marked stale: it can only be rejected.
import type { AliasApproval } from "./api";

export interface ApprovalsPanelProps {
  approvals: AliasApproval[];
  /** The signed-in user's name. */
  me: string | null;
  isAdmin: boolean;
  onDecide: (approval: AliasApproval, verdict: "approve" | "reject") => void;
}

/** Why the signed-in user may not approve `a` (null: they may). */
export function approveBlocked(a: AliasApproval, me: string | null, isAdmin: boolean): string | null {
  if (a.stale) return `${a.alias} moved since this request; ask again`;
  if (a.requested_by !== null && a.requested_by === me) return "You asked for this move: another admin approves it";
  if (!isAdmin) return "Only a team admin approves production moves";
  return null;
}

export function ApprovalsPanel({ approvals, me, isAdmin, onDecide }: ApprovalsPanelProps) {
  if (approvals.length === 0) return null;
  return (
    <section className="panel" aria-labelledby="approvals-title" data-testid="approvals">
      <h2 id="approvals-title">Waiting for approval</h2>
      <ul className="history">
        {approvals.map((a) => {
          const blocked = approveBlocked(a, me, isAdmin);
          const mayReject = isAdmin || (a.requested_by !== null && a.requested_by === me);
          return (
            <li key={a.id} data-testid={`approval-${a.id}`}>
              {a.requested_by ?? "someone"} asks to move {a.alias}{" "}
              {a.from_version ? `v${a.from_version} → ` : "to "}v{a.version}
              {a.note ? `: ${a.note}` : ""}{" "}
              <span className="muted small">{new Date(a.created_at).toLocaleString()}</span>
              {a.stale && (
                <span className="badge badge-failed" title={`${a.alias} now names v${a.current_version ?? "none"}`}>
                  stale
                </span>
              )}{" "}
              <button
                type="button"
                className="primary"
                data-testid={`approve-${a.id}`}
                disabled={blocked !== null}
                title={blocked ?? undefined}
                onClick={() => onDecide(a, "approve")}
              >
                Approve
              </button>{" "}
              <button
                type="button"
                data-testid={`reject-${a.id}`}
                disabled={!mayReject}
                title={mayReject ? undefined : "Only a team admin or the one who asked rejects a request"}
                onClick={() => onDecide(a, "reject")}
              >
                {a.requested_by === me ? "Withdraw" : "Reject"}
              </button>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
