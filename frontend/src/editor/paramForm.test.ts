import { describe, expect, it } from "vitest";
import type { ParamSchema } from "../api/types";
import { UNSET, checkValue, fieldFor, fieldsFor, parseParam } from "./paramForm";

const outFeatures: ParamSchema = { name: "out_features", type: "int", min: 1, max: 65536, required: true, help: "size of each output" };
const dropout: ParamSchema = { name: "p", type: "float", default: 0.5, min: 0, max: 1, help: "probability" };
const bias: ParamSchema = { name: "bias", type: "bool", default: true };
const mode: ParamSchema = { name: "padding", type: "choice", choices: ["same", "valid"], default: "valid" };
const kernel: ParamSchema = { name: "kernel_size", type: "int_list", min: 1, min_items: 1, max_items: 2, default: [3, 3] };

describe("forms from op schemas", () => {
  it("picks a control per type with bounds, choices and help", () => {
    const [a, b, c, d, e] = fieldsFor([outFeatures, dropout, bias, mode, kernel]);
    expect(a).toMatchObject({ kind: "number", min: 1, max: 65536, step: "1", required: true, help: "size of each output", label: "out features" });
    expect(b).toMatchObject({ kind: "number", min: 0, max: 1, step: "any", placeholder: "0.5" });
    expect(c).toMatchObject({ kind: "checkbox" });
    expect(d.choices).toEqual([
      { value: "same", label: "same" },
      { value: "valid", label: "valid" },
    ]);
    expect(e).toMatchObject({ kind: "text", placeholder: "3, 3" });
  });

  it("accepts values in bounds and converts them", () => {
    expect(parseParam(outFeatures, "128")).toEqual({ ok: true, value: 128 });
    expect(parseParam(dropout, "0.25")).toEqual({ ok: true, value: 0.25 });
    expect(parseParam(bias, false)).toEqual({ ok: true, value: false });
    expect(parseParam(mode, "same")).toEqual({ ok: true, value: "same" });
    expect(parseParam(kernel, "3, 5")).toEqual({ ok: true, value: [3, 5] });
    expect(parseParam(kernel, "[2,2]")).toEqual({ ok: true, value: [2, 2] });
  });

  it("names type errors in words", () => {
    expect(parseParam(outFeatures, "12.5")).toEqual({ ok: false, error: "must be a whole number" });
    expect(parseParam(outFeatures, "abc")).toEqual({ ok: false, error: "must be a whole number" });
    expect(parseParam(dropout, "half")).toEqual({ ok: false, error: "must be a number" });
    expect(parseParam(kernel, "3, x")).toEqual({ ok: false, error: "must be a list of whole numbers like 3, 3" });
    expect(parseParam(mode, "full")).toEqual({ ok: false, error: "must be one of: same, valid" });
  });

  it("enforces bounds and lengths", () => {
    expect(parseParam(outFeatures, "0")).toMatchObject({ ok: false, error: "must be at least 1" });
    expect(parseParam(dropout, "1.5")).toMatchObject({ ok: false, error: "must be at most 1" });
    expect(parseParam(kernel, "3, 0")).toMatchObject({ ok: false, error: "item 2 must be at least 1" });
    expect(parseParam(kernel, "3, 3, 3")).toMatchObject({ ok: false, error: "takes at most 2 items" });
  });

  it("keeps an out-of-bounds number (so the node shows the server's error too) but not a non-number", () => {
    expect(parseParam(outFeatures, "0")).toEqual({ ok: false, error: "must be at least 1", value: 0 });
    expect(parseParam(kernel, "3, 0")).toEqual({ ok: false, error: "item 2 must be at least 1", value: [3, 0] });
    expect(parseParam(outFeatures, "1e")).toEqual({ ok: false, error: "must be a whole number" });
  });

  it("leaves an optional empty field unset and requires a required one", () => {
    expect(parseParam(dropout, "")).toEqual({ ok: true, value: UNSET });
    expect(parseParam(outFeatures, " ")).toEqual({ ok: false, error: "is required" });
    expect(checkValue(outFeatures, undefined)).toBe("is required");
    expect(checkValue(outFeatures, 0)).toBe("must be at least 1");
    expect(checkValue(kernel, [3, 3])).toBeNull();
  });

  it("falls back to a text box for a type it does not know", () => {
    expect(fieldFor({ name: "name", type: "str" }).kind).toBe("text");
    expect(parseParam({ name: "name", type: "str" }, " hi ")).toEqual({ ok: true, value: "hi" });
  });
});
