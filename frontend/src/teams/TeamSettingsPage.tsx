// A team's settings (/app/teams/<id>): its members with their roles, and for admins a role select
// per member, a remove button (confirmed), an invite form that shows the link to copy, and the
// pending invitations with revoke. A team always keeps one admin: the server refuses (409) and
// the page says why.
import { type FormEvent, useCallback, useEffect, useState } from "react";
import { ApiError } from "../api/client";
import type { Role } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { type Invitation, type Member, type NewInvitation, ROLES, type TeamDetail, leavesNoAdmin, teamsApi } from "./api";

function InviteForm({ teamId, onInvited }: { teamId: number; onInvited: () => void }) {
  const [who, setWho] = useState("");
  const [role, setRole] = useState<Role>("editor");
  const [made, setMade] = useState<NewInvitation | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [copied, setCopied] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setCopied(false);
    try {
      setMade(await teamsApi.invite(teamId, who, role));
      setWho("");
      onInvited();
    } catch (err) {
      setMade(null);
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="panel invite-form" onSubmit={submit} aria-label="Invite someone" data-testid="invite-form">
      <h2>Invite someone</h2>
      <div className="row">
        <label>
          E-mail or username{" "}
          <input data-testid="invite-who" value={who} onChange={(e) => setWho(e.target.value)} required placeholder="name@example.org" />
        </label>
        <label>
          Role{" "}
          <select data-testid="invite-role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" className="primary" disabled={busy} data-testid="invite-submit">
          {busy ? "Inviting…" : "Invite"}
        </button>
      </div>
      {error && (
        <p className="error" role="alert" data-testid="invite-error">
          {error}
        </p>
      )}
      {made && (
        <div className="invite-link" data-testid="invite-result">
          <p className="small">
            {made.mailed ? "Mailed. " : ""}Share this link with {made.email || made.username}: it works once, until{" "}
            {new Date(made.expires_at).toLocaleString()}, and is not shown again.
          </p>
          <div className="row">
            <input readOnly className="invite-url" data-testid="invite-url" value={made.url} aria-label="Invitation link" onFocus={(e) => e.target.select()} />
            <button
              type="button"
              onClick={async () => {
                try {
                  await navigator.clipboard.writeText(made.url);
                  setCopied(true);
                } catch {
                  setCopied(false);
                }
              }}
            >
              {copied ? "Copied" : "Copy"}
            </button>
          </div>
        </div>
      )}
    </form>
  );
}

function MembersTable({ team, isAdmin, me, onChanged, onError }: {
  team: TeamDetail;
  isAdmin: boolean;
  me: number;
  onChanged: () => void;
  onError: (message: string | null) => void;
}) {
  const members = team.members;

  async function setRole(member: Member, role: Role) {
    onError(null);
    try {
      await teamsApi.setRole(team.id, member.id, role);
    } catch (err) {
      onError((err as Error).message);
    }
    onChanged();
  }

  async function remove(member: Member) {
    const who = member.id === me ? "yourself" : member.username;
    if (!window.confirm(`Remove ${who} from ${team.name}? Their open streams of this team close at once.`)) return;
    onError(null);
    try {
      await teamsApi.remove(team.id, member.id);
    } catch (err) {
      onError((err as Error).message);
    }
    onChanged();
  }

  return (
    <table className="table" data-testid="members-table">
      <caption className="sr-only">Members of {team.name}</caption>
      <thead>
        <tr>
          <th scope="col">Member</th>
          <th scope="col">Role</th>
          {isAdmin && <th scope="col">Remove</th>}
        </tr>
      </thead>
      <tbody>
        {members.map((m) => {
          const lastAdmin = leavesNoAdmin(members, m, null);
          return (
            <tr key={m.id} data-testid={`member-${m.username}`}>
              <td>
                {m.username}
                {m.id === me && <span className="muted small"> (you)</span>}
              </td>
              <td>
                {isAdmin ? (
                  <select
                    aria-label={`Role of ${m.username}`}
                    data-testid={`member-role-${m.username}`}
                    value={m.role}
                    onChange={(e) => void setRole(m, e.target.value as Role)}
                  >
                    {ROLES.map((r) => (
                      <option key={r} value={r} disabled={lastAdmin && r !== "admin"}>
                        {r}
                      </option>
                    ))}
                  </select>
                ) : (
                  m.role
                )}
              </td>
              {isAdmin && (
                <td>
                  <button
                    type="button"
                    data-testid={`member-remove-${m.username}`}
                    disabled={lastAdmin}
                    title={lastAdmin ? "A team always keeps one admin: make someone else admin first." : undefined}
                    onClick={() => void remove(m)}
                  >
                    Remove
                  </button>
                </td>
              )}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function PendingInvitations({ teamId, invitations, onChanged }: { teamId: number; invitations: Invitation[]; onChanged: () => void }) {
  if (invitations.length === 0) return <p className="muted" data-testid="no-invitations">No invitation is waiting.</p>;
  return (
    <table className="table" data-testid="invitations-table">
      <caption className="sr-only">Pending invitations</caption>
      <thead>
        <tr>
          <th scope="col">To</th>
          <th scope="col">Role</th>
          <th scope="col">By</th>
          <th scope="col">Expires</th>
          <th scope="col">Revoke</th>
        </tr>
      </thead>
      <tbody>
        {invitations.map((i) => (
          <tr key={i.id} data-testid={`invitation-${i.id}`}>
            <td>{i.email || i.username}</td>
            <td>{i.role}</td>
            <td className="small">{i.invited_by ?? "-"}</td>
            <td className="small nowrap">{new Date(i.expires_at).toLocaleString()}</td>
            <td>
              <button
                type="button"
                data-testid={`invitation-revoke-${i.id}`}
                onClick={async () => {
                  await teamsApi.revoke(teamId, i.id).catch(() => undefined);
                  onChanged();
                }}
              >
                Revoke
              </button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export default function TeamSettingsPage({ teamId }: { teamId: number }) {
  const { user, refresh } = useSession();
  const [team, setTeam] = useState<TeamDetail | null>(null);
  const [invitations, setInvitations] = useState<Invitation[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [missing, setMissing] = useState(false);
  const isAdmin = team?.role === "admin";

  const load = useCallback(async () => {
    try {
      const detail = await teamsApi.team(teamId);
      setTeam(detail);
      setInvitations(detail.role === "admin" ? await teamsApi.invitations(teamId) : []);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) setMissing(true);
      else setError((err as Error).message);
    }
  }, [teamId]);

  useEffect(() => {
    void load();
  }, [load]);

  const changed = useCallback(() => {
    void load();
    void refresh(); // my own role (or membership) may have changed
  }, [load, refresh]);

  return (
    <div className="page">
      <TopBar />
      <main className="wide-page" data-testid="team-page">
        {missing ? (
          <p data-testid="team-missing">This team does not exist, or you are not a member.</p>
        ) : team === null ? (
          <p className="muted">Loading…</p>
        ) : (
          <>
            <h1>{team.name}</h1>
            <p className="muted small">
              Viewers read, editors do the work, admins also manage members and invitations. A team always keeps one admin.
            </p>
            {error && (
              <p className="error" role="alert" data-testid="team-error">
                {error}
              </p>
            )}
            <h2>Members</h2>
            <MembersTable team={team} isAdmin={isAdmin} me={user?.id ?? 0} onChanged={changed} onError={setError} />
            {isAdmin && (
              <>
                <InviteForm teamId={team.id} onInvited={() => void load()} />
                <h2>Pending invitations</h2>
                <PendingInvitations teamId={team.id} invitations={invitations} onChanged={() => void load()} />
              </>
            )}
          </>
        )}
      </main>
    </div>
  );
}
