// REST calls of the model registry (/api/models/): models, versions from runs, aliases.
import type { components } from "../api/api.gen";
import { apiRequest, resultsOf } from "../api/client";
import type { Page } from "../api/types";

export type RegisteredModel = components["schemas"]["RegisteredModel"];
export type RegisteredModelDetail = components["schemas"]["RegisteredModelDetail"];
export type ModelVersion = components["schemas"]["ModelVersion"];
export type AliasMove = components["schemas"]["AliasMove"];
export type AliasApproval = components["schemas"]["AliasApproval"];
/** What a move of an alias answers: the model, or the request filed for a second admin. */
export type AliasAnswer = RegisteredModelDetail | { approval: AliasApproval };

export function isApproval(answer: AliasAnswer): answer is { approval: AliasApproval } {
  return "approval" in answer && !("versions" in answer);
}

export const modelsApi = {
  list: async (team: number) =>
    resultsOf(await apiRequest<Page<RegisteredModel> | RegisteredModel[]>("GET", `/api/models/?team=${team}&page_size=200`)),
  get: (id: number) => apiRequest<RegisteredModelDetail>("GET", `/api/models/${id}/`),
  create: (team: number, name: string, description = "") =>
    apiRequest<RegisteredModelDetail>("POST", "/api/models/", { team, name, description }),
  register: (model: number, run: number, checkpoint = "", note = "") =>
    apiRequest<ModelVersion>("POST", `/api/models/${model}/versions/`, { run, checkpoint, note }),
  setAlias: (model: number, alias: string, version: number, note = "") =>
    apiRequest<AliasAnswer>("PUT", `/api/models/${model}/aliases/${encodeURIComponent(alias)}/`, { version, note }),
  approvals: (model: number, status: "pending" | "" = "pending") =>
    apiRequest<AliasApproval[]>("GET", `/api/models/${model}/approvals/${status ? `?status=${status}` : ""}`),
  decide: (model: number, approval: number, verdict: "approve" | "reject") =>
    apiRequest<{ approval: AliasApproval }>("POST", `/api/models/${model}/approvals/${approval}/${verdict}/`),
  /** The team setting: moving production needs a second admin's approval (team admins). */
  setApprovalRule: (team: number, on: boolean) =>
    apiRequest<{ production_needs_approval: boolean }>("PATCH", `/api/teams/${team}/`, { production_needs_approval: on }),
  dropAlias: (model: number, alias: string) =>
    apiRequest<void>("DELETE", `/api/models/${model}/aliases/${encodeURIComponent(alias)}/`),
};

/** The figures worth comparing between versions: validation and test metrics that are numbers. */
export function versionFigures(metrics: Record<string, unknown>): [string, number][] {
  return Object.entries(metrics)
    .filter((entry): entry is [string, number] => typeof entry[1] === "number" && /^(val|test)\//.test(entry[0]))
    .sort(([a], [b]) => a.localeCompare(b));
}

/** Each figure of `next` beside the version it would replace: [metric, before, after]. */
export function figuresAgainst(next: Record<string, unknown>, current: Record<string, unknown> | null): [string, number | null, number][] {
  const before = new Map(current ? versionFigures(current) : []);
  return versionFigures(next).map(([key, value]) => [key, before.get(key) ?? null, value]);
}
