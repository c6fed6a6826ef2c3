// JSON requests for the datasets and runs pages: like client.ts, but errors keep the whole body
// (the server puts `errors`, `detail` and `dataset` next to code/message/fields).
import { ApiError, readCookie } from "./client";

/** An API error with the server's whole error object (for `errors`, `detail`, `dataset`). */
export class ApiProblem extends ApiError {
  constructor(
    status: number,
    code: string,
    message: string,
    fields: Record<string, unknown> | null,
    readonly body: Record<string, unknown>,
  ) {
    super(status, code, message, fields);
    this.name = "ApiProblem";
  }
}

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** Turns an error answer (status + parsed body) into an ApiProblem. */
export function problemOf(status: number, data: unknown, fallback: string): ApiProblem {
  const error = (data as { error?: Record<string, unknown> } | null)?.error ?? {};
  const detail = (data as { detail?: unknown } | null)?.detail;
  const message = typeof error.message === "string" ? error.message : typeof detail === "string" ? detail : fallback;
  const code = typeof error.code === "string" ? error.code : `http_${status}`;
  const fields = (error.fields as Record<string, unknown> | undefined) ?? null;
  return new ApiProblem(status, code, message, fields, error);
}

/** The CSRF header for a write, when the cookie is there. */
export function csrfHeaders(method: string): Record<string, string> {
  if (!UNSAFE.has(method)) return {};
  const token = readCookie("csrftoken");
  return token ? { "X-CSRFToken": token } : {};
}

/** One JSON request with the session cookie; throws ApiProblem on an error answer. */
export async function apiRequest<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json", ...csrfHeaders(method) };
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
