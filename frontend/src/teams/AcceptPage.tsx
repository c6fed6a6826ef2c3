// An invitation's page (/app/invitations/<token>), open without signing in: the team, the role and
// who invited; then a new account (username, password) or "Accept as <me>" when signed in. After
// accepting, the app opens in that team. A used, revoked or expired invitation says why.
import { type FormEvent, useEffect, useState } from "react";
import { ApiError } from "../api/client";
import { useSession } from "../auth/session";
import { navigate } from "../router";
import { AFTER_LOGIN_KEY } from "./afterLogin";
import { type InvitationPublic, teamsApi } from "./api";

function fieldErrors(err: unknown): Record<string, string> {
  if (!(err instanceof ApiError) || !err.fields) return {};
  return Object.fromEntries(Object.entries(err.fields).map(([k, v]) => [k, Array.isArray(v) ? v.join(" ") : String(v)]));
}

export default function AcceptPage({ token }: { token: string }) {
  const { user, signIn, signOut, refresh, setTeam } = useSession();
  const [invitation, setInvitation] = useState<InvitationPublic | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [fields, setFields] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    teamsApi.invitation(token).then(setInvitation, (err: Error) =>
      setProblem(err instanceof ApiError && err.status === 404 ? "No such invitation: check the link." : err.message),
    );
  }, [token]);

  async function accept(account?: { username: string; password: string }) {
    setBusy(true);
    setProblem(null);
    setFields({});
    try {
      const accepted = await teamsApi.accept(token, account);
      if (account) await signIn(account.username, account.password);
      else await refresh();
      setTeam(accepted.team.id);
      navigate("/", true);
    } catch (err) {
      setFields(fieldErrors(err));
      setProblem((err as Error).message);
      if (err instanceof ApiError && err.status === 410) setInvitation((i) => (i ? { ...i, valid: false, reason: err.message } : i));
    } finally {
      setBusy(false);
    }
  }

  function submitNew(e: FormEvent) {
    e.preventDefault();
    void accept({ username, password });
  }

  return (
    <main className="login">
      <div className="login-card" data-testid="accept-page">
        <h1>Netloom</h1>
        {invitation === null && !problem && <p className="muted">Loading the invitation…</p>}
        {invitation && (
          <p data-testid="accept-summary">
            {invitation.invited_by ?? "An admin"} invites you to <strong>{invitation.team.name}</strong> as <strong>{invitation.role}</strong>.
          </p>
        )}
        {invitation && !invitation.valid && (
          <p className="error" role="alert" data-testid="accept-gone">
            {invitation.reason}
          </p>
        )}
        {problem && (invitation === null || invitation.valid) && !fields.username && !fields.password && (
          <p className="error" role="alert" data-testid="accept-error">
            {problem}
          </p>
        )}
        {invitation?.valid && user && (
          <>
            <button type="button" className="primary" disabled={busy} data-testid="accept-as-me" onClick={() => void accept()}>
              Accept as {user.username}
            </button>
            <p className="muted small">
              Not you?{" "}
              <button type="button" className="link-button" data-testid="accept-sign-out" onClick={() => void signOut()}>
                Sign out
              </button>{" "}
              to create a new account.
            </p>
          </>
        )}
        {invitation?.valid && !user && (
          <form onSubmit={submitNew} aria-label="Create your account" data-testid="accept-form" className="accept-form">
            <h2>Create your account</h2>
            <label>
              Username
              <input data-testid="accept-username" autoComplete="username" value={username} onChange={(e) => setUsername(e.target.value)} required aria-invalid={fields.username ? true : undefined} />
            </label>
            {fields.username && <span className="error small" data-testid="accept-username-error">{fields.username}</span>}
            <label>
              Password
              <input data-testid="accept-password" type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} required aria-invalid={fields.password ? true : undefined} />
            </label>
            {fields.password && <span className="error small" data-testid="accept-password-error">{fields.password}</span>}
            <button type="submit" className="primary" disabled={busy} data-testid="accept-submit">
              {busy ? "Joining…" : `Join ${invitation.team.name}`}
            </button>
            <p className="muted small">
              Already have an account?{" "}
              <a
                href="#sign-in"
                data-testid="accept-sign-in"
                onClick={(e) => {
                  e.preventDefault();
                  sessionStorage.setItem(AFTER_LOGIN_KEY, `/invitations/${token}`);
                  navigate("/login");
                }}
              >
                Sign in
              </a>{" "}
              and accept as yourself.
            </p>
          </form>
        )}
      </div>
    </main>
  );
}
