import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it, vi } from "vitest";
import type { ModelVersion } from "./api";
import { buildFormats, formatDelta, formatLatency, formatSize, formatsApi, orderedFormats } from "./formats";
import { FormatsTable } from "./VersionFormats";

const figures = {
  file: "model.int8.pt2",
  size: 65075,
  metric: "accuracy",
  value: 0.9,
  fp32_value: 0.9333,
  accuracy_delta: -0.0333,
  latency_ms: { b1: 0.21, b64: 0.4 },
  fp32_latency_ms: { b1: 0.03, b64: 0.13 },
};

const version = (formats: ModelVersion["formats"]) => ({ number: 2, formats }) as unknown as ModelVersion;

describe("a version's formats", () => {
  it("says the size, the change against fp32 and the latency against fp32", () => {
    expect(formatSize(65075)).toBe("63.5 KiB");
    expect(formatDelta(figures)).toBe("accuracy 0.9000 (-0.0333 vs fp32)");
    expect(formatDelta({ ...figures, accuracy_delta: 0 })).toBe("accuracy 0.9000 (±0 vs fp32)");
    expect(formatLatency(0.21, 0.03)).toBe("0.210 ms (fp32 0.030 ms, 7.0×)");
  });

  it("draws each built format with its download link, and a format that could not be built with why", () => {
    const html = renderToStaticMarkup(
      <FormatsTable modelId={7} version={version({ int8: figures, pt2: { ...figures, file: "model.pt2" }, aoti: { error: "no compiler" } })} />,
    );
    expect(html.indexOf("format-pt2")).toBeLessThan(html.indexOf("format-int8"));
    expect(html).toContain('href="/api/models/7/versions/2/download/?format=int8"');
    expect(html).toContain("Not built: no compiler");
    expect(orderedFormats({ aoti: {}, int8: {}, pt2: {} }).map(([k]) => k)).toEqual(["pt2", "int8", "aoti"]);
  });

  it("says so when nothing is built yet", () => {
    expect(renderToStaticMarkup(<FormatsTable modelId={7} version={version({})} />)).toContain("No formats built yet for v2");
  });

  it("follows the build job to its end, and fails with the job's message", async () => {
    const states = ["queued", "running", "done"].map((state, i) => ({ id: 5, state, progress: i / 2, error: null }));
    vi.spyOn(formatsApi, "build").mockResolvedValue(states[0] as never);
    const job = vi.spyOn(formatsApi, "job").mockResolvedValueOnce(states[1] as never).mockResolvedValueOnce(states[2] as never);
    const seen: string[] = [];
    const done = await buildFormats(7, 2, ["pt2", "int8"], (j) => seen.push(j.state), () => Promise.resolve());
    expect(done.state).toBe("done");
    expect(seen).toEqual(["queued", "running", "done"]);
    job.mockResolvedValueOnce({ id: 5, state: "failed", progress: null, error: { message: "no test split" } } as never);
    await expect(buildFormats(7, 2, ["pt2"], () => {}, () => Promise.resolve())).rejects.toThrow("no test split");
  });
});
