import { describe, expect, it } from "vitest";
import type { ParamSchema } from "../api/types";
import { UNSET, checkValue, fieldFor, fieldsFor, formatValue, parseParam, sizeModeOf, sizeParts, sizeTextFor } from "./paramForm";

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

// PyTorch's "int or tuple" parameters, as the catalog describes them (engine kind int_or_tuple).
const kernel2d: ParamSchema = { name: "kernel_size", type: "int_or_tuple", min: 1, max: 4096, dims: 2, default: 3, help: "window" };
const padding2d: ParamSchema = { name: "padding", type: "int_or_tuple", min: 0, max: 4096, dims: 2, default: 0, choices: ["same", "valid"] };
const outputSize: ParamSchema = { name: "output_size", type: "int_or_tuple", min: 1, max: 65536, dims: 2, default: 1, item_nullable: true };
const reduceDims: ParamSchema = { name: "dim", type: "int_or_tuple", min: -64, max: 63, dims: null, min_items: 1, max_items: 8, nullable: true };

describe("forms for sizes that are one number or one per dimension", () => {
  it("draws a size field that knows its dimensions and words", () => {
    expect(fieldFor(kernel2d)).toMatchObject({ kind: "size", dims: 2, words: [], min: 1, placeholder: "3" });
    expect(fieldFor(padding2d)).toMatchObject({ kind: "size", dims: 2, words: ["same", "valid"] });
    expect(fieldFor(outputSize)).toMatchObject({ kind: "size", itemNullable: true });
    expect(fieldFor(reduceDims)).toMatchObject({ kind: "size", dims: null });
  });

  it("takes one number, one per dimension, or a word, as PyTorch does", () => {
    expect(parseParam(kernel2d, "3")).toEqual({ ok: true, value: 3 });
    expect(parseParam(kernel2d, "3, 1")).toEqual({ ok: true, value: [3, 1] });
    expect(parseParam(kernel2d, "(3, 1)")).toEqual({ ok: true, value: [3, 1] });
    expect(parseParam(padding2d, "same")).toEqual({ ok: true, value: "same" });
    expect(parseParam(padding2d, "0, 2")).toEqual({ ok: true, value: [0, 2] });
    expect(parseParam(outputSize, "null, 4")).toEqual({ ok: true, value: [null, 4] });
    expect(parseParam(outputSize, "1")).toEqual({ ok: true, value: 1 });
    expect(parseParam(reduceDims, "-1")).toEqual({ ok: true, value: -1 });
    expect(parseParam(reduceDims, "1, 2, 3")).toEqual({ ok: true, value: [1, 2, 3] });
    expect(parseParam(reduceDims, "")).toEqual({ ok: true, value: UNSET });
  });

  it("says what is wrong in words", () => {
    expect(parseParam(kernel2d, "3, 1, 1")).toMatchObject({ ok: false, error: "needs one number or 2 (one per dimension), got 3" });
    expect(parseParam(kernel2d, "big")).toEqual({ ok: false, error: "must be one whole number or 2 like 3, 3" });
    expect(parseParam(padding2d, "full")).toEqual({ ok: false, error: "must be one whole number or 2 like 3, 3, or same or valid" });
    expect(parseParam(kernel2d, "3, 0")).toEqual({ ok: false, error: "item 2 must be at least 1", value: [3, 0] });
    expect(parseParam(kernel2d, "null, 3")).toMatchObject({ ok: false });
    expect(parseParam(kernel2d, "0")).toEqual({ ok: false, error: "must be at least 1", value: 0 });
  });

  it("checks values already in a spec, lists with nulls included", () => {
    expect(checkValue(kernel2d, [3, 1])).toBeNull();
    expect(checkValue(kernel2d, 5)).toBeNull();
    expect(checkValue(padding2d, "same")).toBeNull();
    expect(checkValue(outputSize, [null, 2])).toBeNull();
    expect(formatValue(outputSize, [null, 2])).toBe("null, 2");
    expect(checkValue(kernel2d, [3, 1, 1])).toBe("needs one number or 2 (one per dimension), got 3");
  });

  it("switches between one number, one per dimension and a word, keeping what was typed", () => {
    expect(sizeModeOf(kernel2d, undefined)).toEqual({ mode: "one" });
    expect(sizeModeOf(kernel2d, [3, 1])).toEqual({ mode: "each" });
    expect(sizeModeOf(padding2d, "same")).toEqual({ mode: "word", word: "same" });
    expect(sizeTextFor(kernel2d, { mode: "each" }, "3")).toBe("3, 3");
    expect(sizeTextFor(kernel2d, { mode: "each" }, "")).toBe("3, 3");
    expect(sizeTextFor(kernel2d, { mode: "one" }, "5, 1")).toBe("5");
    expect(sizeTextFor(padding2d, { mode: "word", word: "valid" }, "1, 1")).toBe("valid");
    expect(sizeTextFor(padding2d, { mode: "one" }, "same")).toBe("0");
    expect(sizeParts(kernel2d, "3")).toEqual(["3", "3"]);
    expect(sizeParts(kernel2d, "3, 1")).toEqual(["3", "1"]);
  });
});
