import type { ReactNode } from "react";
import "../pages.css";
import { navigate, useRoute } from "../router";

const SECTIONS = [
  { path: "/", label: "Graphs", pages: ["graphs", "editor"] },
  { path: "/datasets", label: "Datasets", pages: ["datasets", "datasetLineage"] },
  { path: "/runs", label: "Runs", pages: ["runs", "run"] },
  { path: "/sweeps", label: "Sweeps", pages: ["sweeps", "sweep"] },
  { path: "/models", label: "Models", pages: ["models", "model"] },
  { path: "/workers", label: "Workers", pages: ["workers"] },
  { path: "/audit", label: "Audit", pages: ["audit"], adminOnly: true },
] as const;
import { useSession } from "./session";

/** The bar on every signed-in page: home, team switcher, page actions, user. */
export function TopBar({ children }: { children?: ReactNode }) {
  const { user, team, setTeam, signOut } = useSession();
  const route = useRoute();
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
      {user && (
        <nav className="sections" aria-label="Sections">
          {SECTIONS.filter((s) => !("adminOnly" in s) || team?.role === "admin").map((s) => (
            <a
              key={s.path}
              href={`${import.meta.env.BASE_URL}${s.path.slice(1)}`}
              data-testid={`nav-${s.label.toLowerCase()}`}
              aria-current={(s.pages as readonly string[]).includes(route.page) ? "page" : undefined}
              onClick={(e) => {
                e.preventDefault();
                navigate(s.path);
              }}
            >
              {s.label}
            </a>
          ))}
        </nav>
      )}
      <div className="topbar-main">{children}</div>
      {user && (
        <div className="user">
          {team && (
            <a
              href={`${import.meta.env.BASE_URL}teams/${team.id}`}
              data-testid="nav-team"
              aria-current={route.page === "team" ? "page" : undefined}
              onClick={(e) => {
                e.preventDefault();
                navigate(`/teams/${team.id}`);
              }}
            >
              Team
            </a>
          )}
          <a
            href={`${import.meta.env.BASE_URL}profile`}
            data-testid="current-user"
            title="Your profile: password, teams, tokens"
            aria-current={route.page === "profile" ? "page" : undefined}
            onClick={(e) => {
              e.preventDefault();
              navigate("/profile");
            }}
          >
            {user.username}
          </a>
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
