import { type FormEvent, useState } from "react";
import { ApiError } from "../api/client";
import { navigate } from "../router";
import { AFTER_LOGIN_KEY } from "../teams/afterLogin";
import { useSession } from "./session";

export function LoginPage() {
  const { signIn } = useSession();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

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
      setError(err instanceof ApiError && (err.status === 400 || err.status === 401 || err.status === 403) ? "Wrong username or password." : String((err as Error).message));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="login">
      <form className="login-card" onSubmit={submit} data-testid="login-form" aria-label="Sign in">
        <h1>Netloom</h1>
        <p className="muted">Draw, train, explain and export PyTorch models.</p>
        <label>
          Username
          <input data-testid="login-username" autoComplete="username" autoFocus value={username} onChange={(e) => setUsername(e.target.value)} required />
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
        <button type="submit" className="primary" disabled={busy} data-testid="login-submit">
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
