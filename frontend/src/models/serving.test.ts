import { afterEach, describe, expect, it, vi } from "vitest";
import {
  type ServingStats,
  type TensorMeta,
  addStats,
  curlSnippet,
  emptyHistory,
  fieldKind,
  hasTraffic,
  inferBody,
  inferUrl,
  modelEndpoint,
  pythonSnippet,
  readPrediction,
  servingRequest,
  versionNames,
} from "./serving";

const IRIS: TensorMeta[] = [
  { name: "sepal length (cm)", datatype: "FP32", shape: [-1] },
  { name: "colour", datatype: "BYTES", shape: [-1] },
];
const ENDPOINT = "http://x.test/v2/models/3-flowers";

describe("the model server from the browser", () => {
  it("reads the endpoint a model carries, absent or null until it is served", () => {
    expect(modelEndpoint({ endpoint: `${ENDPOINT}/` })).toBe(ENDPOINT);
    expect(modelEndpoint({ endpoint: `${ENDPOINT}/infer` })).toBe(ENDPOINT); // the API's: the infer URL
    expect(modelEndpoint({ endpoint: null })).toBeNull();
    expect(modelEndpoint({ name: "flowers" })).toBeNull();
    expect(modelEndpoint(null)).toBeNull();
    expect(inferUrl(ENDPOINT)).toBe(`${ENDPOINT}/infer`);
    expect(inferUrl(ENDPOINT, 2)).toBe(`${ENDPOINT}/versions/2/infer`);
  });

  it("asks numbers for FP32, text for BYTES and an upload for an image", () => {
    expect(IRIS.map(fieldKind)).toEqual(["number", "text"]);
    expect(fieldKind({ name: "image", datatype: "BYTES", shape: [-1] })).toBe("image");
    expect(fieldKind({ name: "x", datatype: "BYTES", shape: [-1], parameters: { content_type: "image/png" } })).toBe("image");
  });

  it("sends one row as tensors of shape [1], naming an input left empty", () => {
    expect(inferBody(IRIS, { "sepal length (cm)": "5.1", colour: "blue" })).toEqual({
      inputs: [
        { name: "sepal length (cm)", datatype: "FP32", shape: [1], data: [5.1] },
        { name: "colour", datatype: "BYTES", shape: [1], data: ["blue"] },
      ],
    });
    expect(() => inferBody(IRIS, { colour: "blue" })).toThrow("sepal length (cm): enter a number.");
    expect(() => inferBody([{ name: "image", datatype: "BYTES", shape: [-1] }], {})).toThrow("image: choose an image.");
  });

  it("reads the label and the probabilities, most likely first, with the class names", () => {
    const answer = {
      model_name: "3-flowers",
      model_version: "2",
      outputs: [
        { name: "label", datatype: "BYTES", shape: [1], data: ["versicolor"] },
        { name: "probabilities", datatype: "FP32", shape: [1, 3], data: [0.1, 0.7, 0.2] },
      ],
    };
    expect(readPrediction(answer, ["setosa", "versicolor", "virginica"])).toEqual({
      label: "versicolor",
      probabilities: [["versicolor", 0.7], ["virginica", 0.2], ["setosa", 0.1]],
      version: "2",
    });
    expect(readPrediction(answer).probabilities[0]).toEqual(["1", 0.7]);
  });

  it("writes curl and Python with a placeholder token, never a real one, and quotes safely", () => {
    const body = inferBody(IRIS, { "sepal length (cm)": "5.1", colour: "it's" });
    const curl = curlSnippet(inferUrl(ENDPOINT), body);
    expect(curl).toContain(`curl -sS -X POST '${ENDPOINT}/infer'`);
    expect(curl).toContain('-H "Authorization: Bearer $NETLOOM_TOKEN"');
    expect(curl).toContain(`"data":["it'\\''s"]`);
    const python = pythonSnippet(inferUrl(ENDPOINT), body);
    expect(python).toContain(`requests.post(\n    "${ENDPOINT}/infer",`);
    expect(python).toContain("os.environ['NETLOOM_TOKEN']");
    expect(python).toContain('            {"name": "sepal length (cm)", "datatype": "FP32", "shape": [1], "data": [5.1]},');
    const image = inferBody([{ name: "image", datatype: "BYTES", shape: [-1] }], { image: "A".repeat(5000) });
    expect(curlSnippet(ENDPOINT, image)).toContain("<base64 of your image>");
  });

  it("keeps the polls for the charts: requests per second over the window, p50 and p99 per version", () => {
    const stats = (versions: Record<string, [number, number, number]>): ServingStats => ({
      window_s: 10,
      versions: Object.fromEntries(
        Object.entries(versions).map(([v, [requests, p50, p99]]) => [
          v,
          { requests, errors: 0, latency_ms: { p50, p95: p99, p99 }, batch_size_mean: 1, queue_depth: 0 },
        ]),
      ),
    });
    let h = addStats(emptyHistory(), stats({ "1": [0, 0, 0] }), 100);
    expect(hasTraffic(h)).toBe(false);
    h = addStats(h, stats({ "1": [50, 2, 9], "2": [20, 3, 12] }), 102);
    expect(h.t).toEqual([100, 102]);
    expect(h.versions["1"].rps).toEqual([0, 5]);
    expect(h.versions["2"]).toEqual({ rps: [null, 2], p50: [null, 3], p99: [null, 12] });
    expect(hasTraffic(h)).toBe(true);
    expect(versionNames(addStats(h, stats({ "10": [1, 1, 1] }), 104))).toEqual(["1", "2", "10"]);
    let long = emptyHistory();
    for (let i = 0; i < 10; i++) long = addStats(long, stats({ "1": [i, 1, 1] }), i, 4);
    expect(long.t).toEqual([6, 7, 8, 9]);
    expect(long.versions["1"].rps).toEqual([0.6, 0.7, 0.8, 0.9]);
  });
});

describe("a request to the model server", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("sends JSON with the session and reads an OIP error's text", async () => {
    const fetchMock = vi.fn(async () => new Response(JSON.stringify({ error: "unknown input colour" }), { status: 400 }));
    vi.stubGlobal("fetch", fetchMock);
    vi.stubGlobal("document", { cookie: "csrftoken=abc" });
    await expect(servingRequest("POST", `${ENDPOINT}/infer`, { inputs: [] })).rejects.toThrow("unknown input colour (400)");
    const [url, init] = fetchMock.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe(`${ENDPOINT}/infer`);
    expect(init.credentials).toBe("same-origin");
    expect(init.headers).toMatchObject({ "Content-Type": "application/json", "X-CSRFToken": "abc" });
    expect(init.headers).not.toHaveProperty("Authorization");
  });
});
