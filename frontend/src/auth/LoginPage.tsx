import { type FormEvent, useEffect, useState } from "react";
import { ApiError, api } from "../api/client";
import type { AuthConfig } from "../api/types";
import { BASE, navigate } from "../router";
import { AFTER_LOGIN_KEY } from "../teams/afterLogin";
import { useSession } from "./session";

/** What the sign-in page says when single sign-on sent the browser back with `?sso_error=<code>`. */
export function ssoErrorMessage(code: string, provider: string): string {
  switch (code) {
    case "sso_unavailable":
      return `${provider} could not be reached. Try again in a moment; if it keeps failing, an admin should check the server's NETLOOM_OIDC_ISSUER.`;
    case "sso_no_account":
      return "There is no Netloom account for you yet, and this server does not create one at sign-in: ask a team admin to invite you.";
    case "sso_denied":
      return `${provider} did not let you in (the sign-in was cancelled or refused).`;
    case "sso_state":
      return "That sign-in had expired or was already used: sign in again.";
    case "sso_inactive":
      return "This account is disabled: ask an admin.";
    default:
      return `Signing in with ${provider} failed. Try again; if it fails again, an admin can find the reason in the server's log.`;
  }
}

// An older server has no /api/auth/config/: the password form, as before.
const PASSWORD_ONLY: AuthConfig = { password_sign_in: true, sso: null };

export function LoginPage() {
  const { signIn } = useSession();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [config, setConfig] = useState<AuthConfig | null>(null);
  const [ssoError] = useState(() => new URLSearchParams(window.location.search).get("sso_error"));

  useEffect(() => {
    let live = true;
    api
      .authConfig()
      .then((c) => live && setConfig(c))
      .catch(() => live && setConfig(PASSWORD_ONLY));
    return () => {
      live = false;
    };
  }, []);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(username, password);
      // Back to an invitation opened before signing in, else home.
      const next = sessionStorage.getItem(AFTER_LOGIN_KEY);
      sessionStorage.removeItem(AFTER_LOGIN_KEY);
      navigate(next ?? "/", true);
    } catch (err) {
      if (err instanceof ApiError && err.code === "password_sign_in_off") setError(err.message);
      else if (err instanceof ApiError && (err.status === 400 || err.status === 401 || err.status === 403)) setError("Wrong username or password.");
      else setError(String((err as Error).message));
    } finally {
      setBusy(false);
    }
  }

  const sso = config?.sso ?? null;
  const showPassword = config !== null && config.password_sign_in;
  return (
    <main className="login">
      <div className="login-card">
        <h1>Netloom</h1>
        <p className="muted">Draw, train, explain and export PyTorch models.</p>
        {config === null && <p className="muted">Loading…</p>}
        {ssoError && (
          <p className="error" role="alert" data-testid="sso-error">
            {ssoErrorMessage(ssoError, sso?.name ?? "The sign-in provider")}
          </p>
        )}
        {sso && (
          <a className="button primary sso" data-testid="sso-sign-in" href={`${sso.login_url}?${new URLSearchParams({ next: `${BASE}/` })}`}>
            Sign in with {sso.name}
          </a>
        )}
        {sso && showPassword && <p className="muted or">or with a Netloom password</p>}
        {showPassword && (
          <form className="login-form" onSubmit={submit} data-testid="login-form" aria-label="Sign in">
            <label>
              Username
              <input data-testid="login-username" autoComplete="username" autoFocus={!sso} value={username} onChange={(e) => setUsername(e.target.value)} required />
            </label>
            <label>
              Password
              <input data-testid="login-password" type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} required />
            </label>
            {error && (
              <p className="error" role="alert" data-testid="login-error">
                {error}
              </p>
            )}
            <button type="submit" className={sso ? "" : "primary"} disabled={busy} data-testid="login-submit">
              {busy ? "Signing in…" : "Sign in"}
            </button>
          </form>
        )}
      </div>
    </main>
  );
}
