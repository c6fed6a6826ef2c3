// fetch wrapper: session cookie + CSRF header, JSON in and out, errors as ApiError.
import type {
  GraphSpec,
  GraphSummary,
  OpCatalog,
  Page,
  Revision,
  RevisionSummary,
  User,
  ValidationReport,
} from "./types";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: Record<string, unknown> | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** Reads a cookie by name (Django's CSRF token lives in `csrftoken`). */
export function readCookie(name: string, cookie: string = document.cookie): string | null {
  for (const part of cookie.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return decodeURIComponent(rest.join("="));
  }
  return null;
}

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

async function request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (UNSAFE.has(method)) {
    const token = readCookie("csrftoken");
    if (token) headers["X-CSRFToken"] = token;
  }
  const response = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const error = (data as { error?: { code?: string; message?: string; fields?: Record<string, unknown> } } | null)?.error;
    const detail = (data as { detail?: string } | null)?.detail;
    throw new ApiError(
      response.status,
      error?.code ?? `http_${response.status}`,
      error?.message ?? detail ?? `${method} ${path} failed (${response.status})`,
      error?.fields ?? null,
    );
  }
  return data as T;
}

export const api = {
  csrf: () => request<unknown>("GET", "/api/auth/csrf/"),
  me: () => request<User>("GET", "/api/auth/me/"),
  login: (username: string, password: string) =>
    request<{ user: User } | User>("POST", "/api/auth/login/", { username, password }),
  logout: () => request<unknown>("POST", "/api/auth/logout/", {}),
  ops: () => request<OpCatalog>("GET", "/api/ops/"),
  graphs: (team: number) => request<Page<GraphSummary> | GraphSummary[]>("GET", `/api/graphs/?team=${team}`),
  graph: (id: number) => request<GraphSummary>("GET", `/api/graphs/${id}/`),
  createGraph: (team: number, name: string, spec?: GraphSpec) =>
    request<GraphSummary>("POST", "/api/graphs/", spec ? { team, name, spec } : { team, name }),
  renameGraph: (id: number, name: string) => request<GraphSummary>("PATCH", `/api/graphs/${id}/`, { name }),
  deleteGraph: (id: number) => request<void>("DELETE", `/api/graphs/${id}/`),
  revisions: (id: number) =>
    request<Page<RevisionSummary> | RevisionSummary[]>("GET", `/api/graphs/${id}/revisions/`),
  revision: (id: number, n: number) => request<Revision>("GET", `/api/graphs/${id}/revisions/${n}/`),
  saveRevision: (id: number, spec: GraphSpec) => request<Revision>("POST", `/api/graphs/${id}/revisions/`, { spec }),
  saveLayout: (id: number, n: number, layout: GraphSpec["layout"], ui?: GraphSpec["ui"]) =>
    request<Revision>("PATCH", `/api/graphs/${id}/revisions/${n}/`, ui ? { layout, ui } : { layout }),
  validate: (spec: GraphSpec, signal?: AbortSignal) =>
    request<ValidationReport>("POST", "/api/graphs/validate/", { spec }, signal),
  codegen: (spec: GraphSpec, signal?: AbortSignal) =>
    request<{ source: string }>("POST", "/api/graphs/codegen/", { spec }, signal),
};

/** Lists are paginated ({results}) or plain arrays depending on the endpoint; accept both. */
export function resultsOf<T>(page: Page<T> | T[]): T[] {
  return Array.isArray(page) ? page : page.results;
}
