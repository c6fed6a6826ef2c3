// The browser's one HTTP client: session cookie + CSRF header, JSON in and out, every error
// answer as an ApiError that keeps the server's whole error object (`errors`, `detail`, `dataset`
// sit next to code/message/fields), and multipart uploads with progress (uploadForm).
import type {
  AuthConfig,
  GraphSpec,
  GraphSummary,
  OpCatalog,
  Page,
  Revision,
  RevisionSummary,
  User,
  ValidationReport,
} from "./types";

/** An error answer of the API: status, code, message, field errors and the whole error object. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: Record<string, unknown> | null = null,
    /** The server's whole `error` object (for `errors`, `detail`, `dataset`, `exports`). */
    readonly body: Record<string, unknown> = {},
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

/** The CSRF header for a write, when the cookie is there. */
export function csrfHeaders(method: string): Record<string, string> {
  if (!UNSAFE.has(method)) return {};
  const token = readCookie("csrftoken");
  return token ? { "X-CSRFToken": token } : {};
}

/** Turns an error answer (status + parsed body) into an ApiError. */
export function problemOf(status: number, data: unknown, fallback: string): ApiError {
  const error = (data as { error?: Record<string, unknown> } | null)?.error ?? {};
  const detail = (data as { detail?: unknown } | null)?.detail;
  const message = typeof error.message === "string" ? error.message : typeof detail === "string" ? detail : fallback;
  const code = typeof error.code === "string" ? error.code : `http_${status}`;
  const fields = (error.fields as Record<string, unknown> | undefined) ?? null;
  return new ApiError(status, code, message, fields, error);
}

/** One JSON request with the session cookie; throws ApiError on an error answer. `extra` adds
 * request headers (`Prefer: respond-async` for work the server may run as a job). */
export async function apiRequest<T>(
  method: string,
  path: string,
  body?: unknown,
  signal?: AbortSignal,
  extra: Record<string, string> = {},
): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json", ...csrfHeaders(method), ...extra };
  if (body !== undefined) headers["Content-Type"] = "application/json";
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
  if (!response.ok) throw problemOf(response.status, data, `${method} ${path} failed (${response.status})`);
  return data as T;
}

/** Upload progress: bytes sent so far and the total (null until the browser knows it). */
export interface UploadProgress {
  loaded: number;
  total: number | null;
}

/** POST a multipart form with XMLHttpRequest, so the browser reports upload progress. */
export function uploadForm<T>(
  path: string,
  form: FormData,
  onProgress: (p: UploadProgress) => void,
  signal?: AbortSignal,
): Promise<{ status: number; data: T }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", path);
    xhr.withCredentials = true;
    xhr.setRequestHeader("Accept", "application/json");
    for (const [k, v] of Object.entries(csrfHeaders("POST"))) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress({ loaded: e.loaded, total: e.lengthComputable ? e.total : null });
    xhr.onload = () => {
      let data: unknown = null;
      try {
        data = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        data = null;
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve({ status: xhr.status, data: data as T });
      else reject(problemOf(xhr.status, data, `upload failed (${xhr.status})`));
    };
    xhr.onerror = () => reject(new Error("The upload failed: the connection was lost."));
    xhr.onabort = () => reject(new DOMException("The upload was cancelled.", "AbortError"));
    signal?.addEventListener("abort", () => xhr.abort());
    xhr.send(form);
  });
}

export const api = {
  csrf: () => apiRequest<unknown>("GET", "/api/auth/csrf/"),
  authConfig: () => apiRequest<AuthConfig>("GET", "/api/auth/config/"),
  me: () => apiRequest<User>("GET", "/api/auth/me/"),
  login: (username: string, password: string) =>
    apiRequest<{ user: User } | User>("POST", "/api/auth/login/", { username, password }),
  logout: () => apiRequest<unknown>("POST", "/api/auth/logout/", {}),
  ops: () => apiRequest<OpCatalog>("GET", "/api/ops/"),
  graphs: (team: number) => apiRequest<Page<GraphSummary> | GraphSummary[]>("GET", `/api/graphs/?team=${team}`),
  graph: (id: number) => apiRequest<GraphSummary>("GET", `/api/graphs/${id}/`),
  /** The graph with `latest` as a summary (no spec): what the editor polls every few seconds. */
  graphHead: (id: number) => apiRequest<GraphSummary>("GET", `/api/graphs/${id}/?spec=0`),
  createGraph: (team: number, name: string, spec?: GraphSpec) =>
    apiRequest<GraphSummary>("POST", "/api/graphs/", spec ? { team, name, spec } : { team, name }),
  renameGraph: (id: number, name: string) => apiRequest<GraphSummary>("PATCH", `/api/graphs/${id}/`, { name }),
  deleteGraph: (id: number) => apiRequest<void>("DELETE", `/api/graphs/${id}/`),
  revisions: (id: number) =>
    apiRequest<Page<RevisionSummary> | RevisionSummary[]>("GET", `/api/graphs/${id}/revisions/`),
  revision: (id: number, n: number) => apiRequest<Revision>("GET", `/api/graphs/${id}/revisions/${n}/`),
  saveRevision: (id: number, spec: GraphSpec) => apiRequest<Revision>("POST", `/api/graphs/${id}/revisions/`, { spec }),
  validate: (spec: GraphSpec, signal?: AbortSignal) =>
    apiRequest<ValidationReport>("POST", "/api/graphs/validate/", { spec }, signal),
  codegen: (spec: GraphSpec, signal?: AbortSignal) =>
    apiRequest<{ source: string }>("POST", "/api/graphs/codegen/", { spec }, signal),
};

/** Lists are paginated ({results}) or plain arrays depending on the endpoint; accept both. */
export function resultsOf<T>(page: Page<T> | T[]): T[] {
  return Array.isArray(page) ? page : page.results;
}
