import { describe, expect, it } from "vitest";
import type { Dataset } from "../runs/types";
import { uploadMessage } from "./uploadMessage";

const checking = { tone: "ok" as const, text: "shapes is uploaded and being checked.", datasetId: 7 };

function dataset(status: string, error: unknown = null): Dataset {
  return { id: 7, name: "shapes", status, error } as unknown as Dataset;
}

describe("uploadMessage", () => {
  it("says 'being checked' while the dataset is processing", () => {
    expect(uploadMessage(checking, [dataset("processing")])).toEqual(checking);
  });
  it("turns into the failure and its reason once the check fails", () => {
    const m = uploadMessage(checking, [dataset("failed", { code: "bad_value", message: "row 3, column 'b': 'zz' is not a number" })]);
    expect(m?.tone).toBe("error");
    expect(m?.text).toContain("shapes failed its check");
    expect(m?.text).toContain("'zz' is not a number");
  });
  it("says ready once it is", () => {
    expect(uploadMessage(checking, [dataset("ready")])).toEqual({ tone: "ok", text: "shapes is ready." });
  });
  it("leaves a refusal as it came", () => {
    expect(uploadMessage({ tone: "error", text: "too large" }, [])).toEqual({ tone: "error", text: "too large" });
  });
});
