// Who is signed in, which team is current, and what the role allows.
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from "react";
import { ApiError, api } from "../api/client";
import type { Team, User } from "../api/types";

const TEAM_KEY = "netloom:team";

export interface Session {
  user: User | null;
  loading: boolean;
  team: Team | null;
  canEdit: boolean;
  setTeam: (id: number) => void;
  signIn: (username: string, password: string) => Promise<void>;
  signOut: () => Promise<void>;
  refresh: () => Promise<void>;
}

const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error("useSession outside SessionProvider");
  return s;
}

export function SessionProvider({ children }: { children: ReactNode }) {
  const [user, setUser] = useState<User | null>(null);
  const [loading, setLoading] = useState(true);
  const [teamId, setTeamId] = useState<number | null>(() => {
    const v = localStorage.getItem(TEAM_KEY);
    return v ? Number(v) : null;
  });

  const refresh = useCallback(async () => {
    try {
      await api.csrf().catch(() => undefined);
      setUser(await api.me());
    } catch (e) {
      if (!(e instanceof ApiError) || (e.status !== 401 && e.status !== 403)) console.error(e);
      setUser(null);
    } finally {
      setLoading(false);
    }
  }, []);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  const signIn = useCallback(
    async (username: string, password: string) => {
      await api.csrf().catch(() => undefined);
      await api.login(username, password);
      // Django rotates the CSRF token at login; fetch the new cookie before any write.
      await refresh();
    },
    [refresh],
  );

  const signOut = useCallback(async () => {
    await api.logout().catch(() => undefined);
    setUser(null);
  }, []);

  const setTeam = useCallback((id: number) => {
    localStorage.setItem(TEAM_KEY, String(id));
    setTeamId(id);
  }, []);

  const team = useMemo(() => {
    if (!user || user.teams.length === 0) return null;
    return user.teams.find((t) => t.id === teamId) ?? user.teams[0];
  }, [user, teamId]);

  const value: Session = {
    user,
    loading,
    team,
    canEdit: team?.role === "editor" || team?.role === "admin",
    setTeam,
    signIn,
    signOut,
    refresh,
  };
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}
