// A small router for the three pages; every URL lives under /app/ (Vite's base).
import { useEffect, useState } from "react";

export const BASE = import.meta.env.BASE_URL.replace(/\/$/, ""); // "/app"

export type Route = { page: "login" } | { page: "graphs" } | { page: "editor"; graphId: number } | { page: "missing" };

export function parseRoute(pathname: string): Route {
  const path = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  if (path === "" || path === "/") return { page: "graphs" };
  if (path === "/login" || path === "/login/") return { page: "login" };
  const m = /^\/graphs\/(\d+)\/?$/.exec(path);
  if (m) return { page: "editor", graphId: Number(m[1]) };
  return { page: "missing" };
}

export function navigate(path: string, replace = false): void {
  const url = BASE + path;
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  window.dispatchEvent(new PopStateEvent("popstate"));
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname));
  useEffect(() => {
    const onPop = () => setRoute(parseRoute(location.pathname));
    window.addEventListener("popstate", onPop);
    return () => window.removeEventListener("popstate", onPop);
  }, []);
  return route;
}
