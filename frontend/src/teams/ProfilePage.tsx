// The signed-in user's page (/app/profile): change the password, the teams with their roles (and
// their settings), and the user's API tokens (list, revoke) as the API returns them.
import { type FormEvent, useCallback, useEffect, useState } from "react";
import { ApiError } from "../api/client";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { BASE, navigate } from "../router";
import { type ApiToken, teamsApi, tokenState } from "./api";

function PasswordForm() {
  const [oldPassword, setOld] = useState("");
  const [newPassword, setNew] = useState("");
  const [fields, setFields] = useState<Record<string, string>>({});
  const [done, setDone] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setDone(false);
    setError(null);
    setFields({});
    try {
      await teamsApi.changePassword(oldPassword, newPassword);
      setOld("");
      setNew("");
      setDone(true);
    } catch (err) {
      setError((err as Error).message);
      if (err instanceof ApiError && err.fields)
        setFields(Object.fromEntries(Object.entries(err.fields).map(([k, v]) => [k, Array.isArray(v) ? v.join(" ") : String(v)])));
    }
  }

  return (
    <form className="panel profile-form" onSubmit={submit} aria-label="Change password" data-testid="password-form">
      <h2>Change password</h2>
      <label>
        Current password <input type="password" autoComplete="current-password" data-testid="password-old" value={oldPassword} onChange={(e) => setOld(e.target.value)} required />
      </label>
      {fields.old_password && <span className="error small">{fields.old_password}</span>}
      <label>
        New password <input type="password" autoComplete="new-password" data-testid="password-new" value={newPassword} onChange={(e) => setNew(e.target.value)} required />
      </label>
      {fields.new_password && <span className="error small">{fields.new_password}</span>}
      {error && !Object.keys(fields).length && <p className="error" role="alert">{error}</p>}
      {done && <p data-testid="password-done">Password changed. Your other browser sessions are signed out; API tokens still work.</p>}
      <button type="submit" className="primary" data-testid="password-submit">
        Change password
      </button>
    </form>
  );
}

function TokensTable() {
  const [tokens, setTokens] = useState<ApiToken[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(() => {
    teamsApi.tokens().then(setTokens, (err: Error) => setError(err.message));
  }, []);
  useEffect(load, [load]);
  if (error) return <p className="error">{error}</p>;
  if (tokens === null) return <p className="muted">Loading…</p>;
  if (tokens.length === 0) return <p className="muted" data-testid="no-tokens">You have no API tokens (`netloom login` makes one).</p>;
  const shown = tokens[0] ? Object.keys(tokens[0]).filter((k) => !["id", "name", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at"].includes(k)) : [];
  return (
    <table className="table" data-testid="tokens-table">
      <caption className="sr-only">Your API tokens</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Starts with</th>
          {shown.map((k) => (
            <th scope="col" key={k}>
              {k}
            </th>
          ))}
          <th scope="col">Created</th>
          <th scope="col">Last used</th>
          <th scope="col">State</th>
          <th scope="col">Revoke</th>
        </tr>
      </thead>
      <tbody>
        {tokens.map((t) => {
          const state = tokenState(t);
          const extra = t as unknown as Record<string, unknown>;
          return (
            <tr key={t.id} data-testid={`token-${t.id}`} className={state === "live" ? undefined : "muted"}>
              <td>{t.name || "-"}</td>
              <td>
                <code>{t.prefix}…</code>
              </td>
              {shown.map((k) => (
                <td key={k} className="small">
                  {extra[k] === null || extra[k] === undefined ? "-" : String(extra[k])}
                </td>
              ))}
              <td className="small nowrap">{new Date(t.created_at).toLocaleString()}</td>
              <td className="small nowrap">{t.last_used_at ? new Date(t.last_used_at).toLocaleString() : "never"}</td>
              <td>{state}</td>
              <td>
                {state === "live" && (
                  <button
                    type="button"
                    data-testid={`token-revoke-${t.id}`}
                    onClick={async () => {
                      if (!window.confirm(`Revoke the token "${t.name || t.prefix}"? Whatever uses it stops working at once.`)) return;
                      await teamsApi.revokeToken(t.id).catch((err: Error) => setError(err.message));
                      load();
                    }}
                  >
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

export default function ProfilePage() {
  const { user } = useSession();
  if (!user) return null;
  return (
    <div className="page">
      <TopBar />
      <main className="wide-page" data-testid="profile-page">
        <h1>{user.username}</h1>
        <PasswordForm />
        <h2>My teams</h2>
        <table className="table" data-testid="my-teams">
          <caption className="sr-only">Your teams</caption>
          <thead>
            <tr>
              <th scope="col">Team</th>
              <th scope="col">Role</th>
            </tr>
          </thead>
          <tbody>
            {user.teams.map((t) => (
              <tr key={t.id}>
                <td>
                  <a
                    href={`${BASE}/teams/${t.id}`}
                    onClick={(e) => {
                      e.preventDefault();
                      navigate(`/teams/${t.id}`);
                    }}
                  >
                    {t.name}
                  </a>
                </td>
                <td>{t.role}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <h2>My API tokens</h2>
        <TokensTable />
      </main>
    </div>
  );
}
