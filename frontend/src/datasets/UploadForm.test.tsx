import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { Dataset } from "../runs/types";
import { UploadForm, versionOptions, versionUploaded } from "./UploadForm";

const parts = { id: 4, name: "parts", kind: "csv", options: { target: "kind", delimiter: ";" } } as unknown as Dataset;

describe("one upload form for a new dataset and for a new version", () => {
  it("asks for a name for a new dataset, and takes any kind of file", () => {
    const html = renderToStaticMarkup(<UploadForm team={1} datasets={[]} onDone={() => {}} />);
    expect(html).toContain('aria-label="Upload a dataset"');
    expect(html).toContain('data-testid="upload-name"');
    expect(html).toContain('accept=".csv,.tsv,.txt,.zip,.safetensors,.npz"');
    expect(html).toContain(">Upload</button>");
  });

  it("uploads the next version of a dataset: no name, its kind of file only", () => {
    const html = renderToStaticMarkup(<UploadForm of={parts} onDone={() => {}} />);
    expect(html).toContain('aria-label="Upload a new version of parts"');
    expect(html).toContain('data-testid="version-upload-form"');
    expect(html).not.toContain('data-testid="upload-name"');
    expect(html).toContain('accept=".csv,.tsv,.txt"');
    expect(html).toContain(">Upload version</button>");
  });

  it("sends a version's options only when the form changed them, over the dataset's own", () => {
    expect(versionOptions(parts.options as Record<string, unknown>, { target: "kind", delimiter: ";" })).toBeUndefined();
    expect(versionOptions({ target: "kind", features: ["a"] }, { target: "size" })).toEqual({ target: "size", features: ["a"] });
    expect(versionOptions({ size: [32, 32], channels: 3 }, { size: [32, 32], channels: 3 })).toBeUndefined();
  });

  it("says which version the upload made", () => {
    expect(versionUploaded(201, { number: 2 })).toBe("Version 2 is ready.");
    expect(versionUploaded(202, { number: 3 })).toBe("Version 3 is uploaded and being checked.");
  });
});
