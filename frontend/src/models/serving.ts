// Talking to the model server (Open Inference Protocol v2) from the browser: the endpoint a model
// carries, the metadata's inputs as form fields, the infer request and its answer, the snippets a
// person copies (with a placeholder token, never theirs), and the live stats kept for the charts.
import { csrfHeaders, problemOf } from "../api/client";

/** One input or output of the served model (OIP v2 metadata). */
export interface TensorMeta {
  name: string;
  datatype: string;
  shape: number[];
  parameters?: Record<string, unknown>;
}

export interface ModelMetadata {
  name?: string;
  versions?: string[];
  inputs: TensorMeta[];
  outputs: TensorMeta[];
}

export interface InferTensor {
  name: string;
  datatype: string;
  shape: number[];
  data: unknown[];
}

export interface InferAnswer {
  model_name?: string;
  model_version?: string;
  outputs: InferTensor[];
}

/** The URL a model is served at, its metadata's (absent or null until the model server serves it).
 * The API's `endpoint` is the default alias's infer URL (`.../v2/models/<served>/infer`); the page
 * also asks the model's metadata, `/stats` and `/versions/<n>/infer`, so it keeps the model's URL. */
export function modelEndpoint(model: object | null): string | null {
  const endpoint = (model as { endpoint?: unknown } | null)?.endpoint;
  return typeof endpoint === "string" && endpoint ? endpoint.replace(/\/+$/, "").replace(/\/infer$/, "") : null;
}

/** Where to send a row: the default alias's version, or one version by number. */
export function inferUrl(endpoint: string, version: number | null = null): string {
  return version === null ? `${endpoint}/infer` : `${endpoint}/versions/${version}/infer`;
}

export type FieldKind = "number" | "text" | "image";

/** How the form asks for an input: a number (FP32, INT64, ...), an image upload (BYTES marked as an
 * image by its parameters' content_type, or named image), or text (other BYTES). */
export function fieldKind(input: TensorMeta): FieldKind {
  if (input.datatype === "BYTES") {
    const type = String(input.parameters?.content_type ?? "");
    return type.startsWith("image") || /^(image|images|img)$/i.test(input.name) ? "image" : "text";
  }
  return "number";
}

/** The body of an infer request for one row: each input as a tensor of shape [1]. Throws naming
 * the input when a number field is empty or not a number. */
export function inferBody(inputs: TensorMeta[], values: Record<string, string>): { inputs: InferTensor[] } {
  return {
    inputs: inputs.map((input) => {
      const raw = values[input.name] ?? "";
      if (fieldKind(input) === "number") {
        const value = Number(raw);
        if (raw.trim() === "" || !Number.isFinite(value)) throw new Error(`${input.name}: enter a number.`);
        return { name: input.name, datatype: input.datatype, shape: [1], data: [value] };
      }
      if (fieldKind(input) === "image" && !raw) throw new Error(`${input.name}: choose an image.`);
      return { name: input.name, datatype: "BYTES", shape: [1], data: [raw] };
    }),
  };
}

export interface Prediction {
  label: string | null;
  /** [class, probability], most likely first. */
  probabilities: [string, number][];
  version: string | null;
}

/** The label and probabilities of an infer answer's first row (`classes` names the columns). */
export function readPrediction(answer: InferAnswer, classes: readonly string[] = []): Prediction {
  const label = answer.outputs.find((o) => o.name === "label");
  const probs = answer.outputs.find((o) => o.name === "probabilities");
  const width = probs ? (probs.shape.length > 1 ? probs.shape[probs.shape.length - 1] : probs.data.length) : 0;
  const row = probs ? (probs.data as number[]).slice(0, width) : [];
  return {
    label: label && label.data.length ? String(label.data[0]) : null,
    probabilities: row
      .map((p, i): [string, number] => [classes.length === row.length ? classes[i] : String(i), Number(p)])
      .sort((a, b) => b[1] - a[1]),
    version: answer.model_version ?? null,
  };
}

/** GET or POST to the model server with the browser's session (the same front as the API). */
export async function servingRequest<T>(method: "GET" | "POST", url: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json", ...csrfHeaders(method) };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  const text = await response.text();
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    // OIP v2 errors are {"error": "<text>"}; the API's are {"error": {code, message}}.
    const plain = (data as { error?: unknown } | null)?.error;
    if (typeof plain === "string") throw new Error(`${plain} (${response.status})`);
    throw problemOf(response.status, data, `${method} ${url} failed (${response.status})`);
  }
  return data as T;
}

/** The body shown in snippets: images shortened to a placeholder (a snippet is read, not a dump). */
function snippetBody(body: { inputs: InferTensor[] }): { inputs: InferTensor[] } {
  return {
    inputs: body.inputs.map((t) =>
      t.datatype === "BYTES" && typeof t.data[0] === "string" && t.data[0].length > 200
        ? { ...t, data: ["<base64 of your image>"] }
        : t,
    ),
  };
}

/** A curl command sending `body`; the token is the $NETLOOM_TOKEN placeholder. */
export function curlSnippet(url: string, body: { inputs: InferTensor[] }): string {
  const json = JSON.stringify(snippetBody(body)).replace(/'/g, "'\\''");
  return [
    `curl -sS -X POST '${url}' \\`,
    `  -H "Authorization: Bearer $NETLOOM_TOKEN" \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -d '${json}'`,
  ].join("\n");
}

/** The same request with Python's requests; the token comes from the NETLOOM_TOKEN variable. */
export function pythonSnippet(url: string, body: { inputs: InferTensor[] }): string {
  // One input per line: a row of a dozen columns stays readable.
  const tensors = snippetBody(body).inputs.map(
    (t) =>
      `        {"name": ${JSON.stringify(t.name)}, "datatype": ${JSON.stringify(t.datatype)}, ` +
      `"shape": ${JSON.stringify(t.shape)}, "data": ${JSON.stringify(t.data)}},`,
  );
  const json = ["{", '        "inputs": [', ...tensors.map((line) => `    ${line}`), "        ]", "    }"].join("\n");
  return [
    "import os",
    "",
    "import requests",
    "",
    "response = requests.post(",
    `    ${JSON.stringify(url)},`,
    '    headers={"Authorization": f"Bearer {os.environ[\'NETLOOM_TOKEN\']}"},',
    `    json=${json},`,
    "    timeout=30,",
    ")",
    "response.raise_for_status()",
    'for output in response.json()["outputs"]:',
    '    print(output["name"], output["data"])',
  ].join("\n");
}

// ---- live stats ---------------------------------------------------------------------------------

/** `GET <endpoint>/stats`: per version, figures over the last `window_s` seconds. */
export interface ServingStats {
  versions: Record<
    string,
    {
      requests: number;
      errors: number;
      latency_ms: { p50: number | null; p95: number | null; p99: number | null };
      batch_size_mean: number | null;
      queue_depth: number;
    }
  >;
  window_s: number;
}

/** The polls kept for the charts: a shared time axis and, per version, requests/s, p50 and p99
 * (null where the version was not in that poll). */
export interface StatsHistory {
  t: number[];
  versions: Record<string, { rps: (number | null)[]; p50: (number | null)[]; p99: (number | null)[] }>;
}

/** Points kept per line: two minutes and a half at one poll every 2 s. */
export const STATS_POINTS = 75;

export const emptyHistory = (): StatsHistory => ({ t: [], versions: {} });

/** The history with one more poll (`at`: seconds); the oldest dropped past `limit` points. */
export function addStats(history: StatsHistory, stats: ServingStats, at: number, limit = STATS_POINTS): StatsHistory {
  const keep = (xs: (number | null)[], x: number | null) => [...xs, x].slice(-limit);
  const n = history.t.length;
  const names = new Set([...Object.keys(history.versions), ...Object.keys(stats.versions)]);
  const versions: StatsHistory["versions"] = {};
  const window = stats.window_s > 0 ? stats.window_s : 1;
  for (const name of names) {
    const before = history.versions[name] ?? {
      rps: Array<number | null>(n).fill(null),
      p50: Array<number | null>(n).fill(null),
      p99: Array<number | null>(n).fill(null),
    };
    const now = stats.versions[name];
    versions[name] = {
      rps: keep(before.rps, now ? now.requests / window : null),
      p50: keep(before.p50, now?.latency_ms.p50 ?? null),
      p99: keep(before.p99, now?.latency_ms.p99 ?? null),
    };
  }
  return { t: [...history.t, at].slice(-limit), versions };
}

/** Whether any version answered a request in what the history holds (else: the empty state). */
export function hasTraffic(history: StatsHistory): boolean {
  return Object.values(history.versions).some((v) => v.rps.some((x) => x !== null && x > 0));
}

/** Versions in number order ("1", "2", "10"). */
export function versionNames(history: StatsHistory): string[] {
  return Object.keys(history.versions).sort((a, b) => Number(a) - Number(b) || a.localeCompare(b));
}
