// A small router for the pages; every URL lives under /app/ (Vite's base).
import { useEffect, useState } from "react";

export const BASE = import.meta.env.BASE_URL.replace(/\/$/, ""); // "/app"

export type Route =
  | { page: "login" }
  | { page: "graphs" }
  | { page: "editor"; graphId: number }
  | { page: "datasets" }
  | { page: "runs"; graphId: number | null }
  | { page: "run"; runId: number }
  | { page: "lineage"; runId: number }
  | { page: "versionLineage"; modelId: number; version: number }
  | { page: "datasetLineage"; datasetId: number; version: number }
  | { page: "compare"; runIds: number[] }
  | { page: "sweeps" }
  | { page: "sweep"; sweepId: number }
  | { page: "models" }
  | { page: "model"; modelId: number }
  | { page: "workers" }
  | { page: "team"; teamId: number }
  | { page: "invitation"; token: string }
  | { page: "profile" }
  | { page: "audit" }
  | { page: "missing" };

export function parseRoute(pathname: string, search = ""): Route {
  const path = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  if (path === "" || path === "/") return { page: "graphs" };
  if (path === "/login" || path === "/login/") return { page: "login" };
  const m = /^\/graphs\/(\d+)\/?$/.exec(path);
  if (m) return { page: "editor", graphId: Number(m[1]) };
  if (path === "/datasets" || path === "/datasets/") return { page: "datasets" };
  if (path === "/runs" || path === "/runs/") {
    const graph = Number(new URLSearchParams(search).get("graph"));
    return { page: "runs", graphId: Number.isInteger(graph) && graph > 0 ? graph : null };
  }
  const run = /^\/runs\/(\d+)\/?$/.exec(path);
  if (run) return { page: "run", runId: Number(run[1]) };
  const lineage = /^\/runs\/(\d+)\/lineage\/?$/.exec(path);
  if (lineage) return { page: "lineage", runId: Number(lineage[1]) };
  const versionLineage = /^\/models\/(\d+)\/versions\/(\d+)\/lineage\/?$/.exec(path);
  if (versionLineage) return { page: "versionLineage", modelId: Number(versionLineage[1]), version: Number(versionLineage[2]) };
  const datasetLineage = /^\/datasets\/(\d+)\/versions\/(\d+)\/lineage\/?$/.exec(path);
  if (datasetLineage) return { page: "datasetLineage", datasetId: Number(datasetLineage[1]), version: Number(datasetLineage[2]) };
  if (path === "/compare" || path === "/compare/") {
    const ids = (new URLSearchParams(search).get("ids") ?? "")
      .split(",")
      .map((part) => Number(part))
      .filter((id) => Number.isInteger(id) && id > 0);
    return { page: "compare", runIds: [...new Set(ids)] };
  }
  if (path === "/sweeps" || path === "/sweeps/") return { page: "sweeps" };
  if (path === "/models" || path === "/models/") return { page: "models" };
  const model = /^\/models\/(\d+)\/?$/.exec(path);
  if (model) return { page: "model", modelId: Number(model[1]) };
  if (path === "/workers" || path === "/workers/") return { page: "workers" };
  const team = /^\/teams\/(\d+)\/?$/.exec(path);
  if (team) return { page: "team", teamId: Number(team[1]) };
  const invitation = /^\/invitations\/([A-Za-z0-9_-]+)\/?$/.exec(path);
  if (invitation) return { page: "invitation", token: invitation[1] };
  if (path === "/profile" || path === "/profile/") return { page: "profile" };
  if (path === "/audit" || path === "/audit/") return { page: "audit" };
  const sweep = /^\/sweeps\/(\d+)\/?$/.exec(path);
  if (sweep) return { page: "sweep", sweepId: Number(sweep[1]) };
  return { page: "missing" };
}

export function navigate(path: string, replace = false): void {
  const url = BASE + path;
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  window.dispatchEvent(new PopStateEvent("popstate"));
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname, location.search));
  useEffect(() => {
    const onPop = () => setRoute(parseRoute(location.pathname, location.search));
    window.addEventListener("popstate", onPop);
    return () => window.removeEventListener("popstate", onPop);
  }, []);
  return route;
}
