import type { ReactNode } from "react";
import { navigate } from "../router";
import { useSession } from "./session";

/** The bar on every signed-in page: home, team switcher, page actions, user. */
export function TopBar({ children }: { children?: ReactNode }) {
  const { user, team, setTeam, signOut } = useSession();
  return (
    <header className="topbar">
      <a
        className="brand"
        href={`${import.meta.env.BASE_URL}`}
        onClick={(e) => {
          e.preventDefault();
          navigate("/");
        }}
      >
        Netloom
      </a>
      {user && user.teams.length > 0 && (
        <label className="team-switch">
          <span className="sr-only">Team</span>
          <select aria-label="Team" data-testid="team-switcher" value={team?.id ?? ""} onChange={(e) => setTeam(Number(e.target.value))}>
            {user.teams.map((t) => (
              <option key={t.id} value={t.id}>
                {t.name} ({t.role})
              </option>
            ))}
          </select>
        </label>
      )}
      <div className="topbar-main">{children}</div>
      {user && (
        <div className="user">
          <span data-testid="current-user">{user.username}</span>
          <button
            type="button"
            data-testid="sign-out"
            onClick={async () => {
              await signOut();
              navigate("/login", true);
            }}
          >
            Sign out
          </button>
        </div>
      )}
    </header>
  );
}
