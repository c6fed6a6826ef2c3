// Parameter forms generated from the op catalog, and the checks run as the user types.
import type { ParamSchema } from "../api/types";

export type FieldKind = "number" | "checkbox" | "select" | "text" | "size";

export interface FieldModel {
  name: string;
  label: string;
  kind: FieldKind;
  type: string;
  required: boolean;
  help: string;
  min?: number;
  max?: number;
  step?: string;
  choices?: { value: string; label: string }[];
  placeholder: string;
  /** kind "size" (PyTorch's "int or tuple"): how many numbers "one per dimension" takes (null: any). */
  dims?: number | null;
  /** kind "size": the words it also takes ("same", "valid"). */
  words?: string[];
  /** kind "size": a per-dimension item may be null ("keep that size"). */
  itemNullable?: boolean;
}

/**
 * A failed parse may still carry a `value` (a number out of bounds): the editor stores it so the
 * server's check marks the node too, while the form already says what is wrong.
 */
export type ParseResult = { ok: true; value: unknown } | { ok: false; error: string; value?: unknown };

/** Marks "no value set" (the op's default applies): the param is left out of the spec. */
export const UNSET = Symbol("unset");

function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

export function fieldFor(param: ParamSchema): FieldModel {
  const base = {
    name: param.name,
    label: param.name.replace(/_/g, " "),
    type: param.type,
    required: !!param.required,
    help: param.help ?? "",
    placeholder: param.default === undefined || param.default === null ? "" : formatValue(param, param.default),
  };
  switch (param.type) {
    case "int":
    case "float":
      return { ...base, kind: "number", min: num(param.min), max: num(param.max), step: param.type === "int" ? "1" : "any" };
    case "bool":
      return { ...base, kind: "checkbox" };
    case "choice":
      return { ...base, kind: "select", choices: (param.choices ?? []).map((c) => ({ value: String(c), label: String(c) })) };
    case "int_or_tuple":
      return {
        ...base,
        kind: "size",
        min: num(param.min),
        max: num(param.max),
        step: "1",
        dims: num(param.dims) ?? null,
        words: (param.choices ?? []).map(String),
        itemNullable: !!param.item_nullable,
      };
    default:
      return { ...base, kind: "text" };
  }
}

export function fieldsFor(params: ParamSchema[]): FieldModel[] {
  return params.map(fieldFor);
}

export function formatValue(param: ParamSchema, value: unknown): string {
  if (value === undefined || value === null) return "";
  if (Array.isArray(value)) return value.map((v) => (v === null ? "null" : String(v))).join(", ");
  if (param.type === "bool") return value ? "true" : "false";
  return String(value);
}

function bounds(param: ParamSchema, n: number, what = "must be"): string | null {
  const min = num(param.min);
  const max = num(param.max);
  if (min !== undefined && n < min) return `${what} at least ${min}`;
  if (max !== undefined && n > max) return `${what} at most ${max}`;
  return null;
}

function parseNumber(param: ParamSchema, text: string, integer: boolean): ParseResult {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) {
    return { ok: false, error: integer ? "must be a whole number" : "must be a number" };
  }
  const n = Number(text);
  if (integer && !Number.isInteger(n)) return { ok: false, error: "must be a whole number" };
  const problem = bounds(param, n);
  return problem ? { ok: false, error: problem, value: n } : { ok: true, value: n };
}

/** Parses what the user typed (or ticked) into the value the spec stores, or says what is wrong. */
export function parseParam(param: ParamSchema, raw: string | boolean): ParseResult {
  if (param.type === "bool") {
    if (typeof raw === "boolean") return { ok: true, value: raw };
    if (raw === "true" || raw === "false") return { ok: true, value: raw === "true" };
    if (raw === "") return param.required ? { ok: false, error: "is required" } : { ok: true, value: UNSET };
    return { ok: false, error: "must be true or false" };
  }
  const text = String(raw).trim();
  if (text === "") return param.required ? { ok: false, error: "is required" } : { ok: true, value: UNSET };
  switch (param.type) {
    case "int":
      return parseNumber(param, text, true);
    case "float":
      return parseNumber(param, text, false);
    case "choice": {
      const choice = (param.choices ?? []).find((c) => String(c) === text);
      if (choice === undefined) return { ok: false, error: `must be one of: ${(param.choices ?? []).map(String).join(", ")}` };
      return { ok: true, value: choice };
    }
    case "int_or_tuple":
      return parseSize(param, text);
    case "int_list":
    case "float_list": {
      const integer = param.type === "int_list";
      const parts = text.replace(/^[[(]|[\])]$/g, "").split(/[\s,]+/).filter(Boolean);
      const values: number[] = [];
      let outOfBounds: string | null = null;
      for (const [i, part] of parts.entries()) {
        const r = parseNumber({ ...param }, part, integer);
        if (!r.ok && r.value === undefined) return { ok: false, error: `must be a list of ${integer ? "whole numbers" : "numbers"} like 3, 3` };
        if (!r.ok) outOfBounds ??= `item ${i + 1} ${r.error}`;
        values.push(r.value as number);
      }
      const minLen = num(param.min_items);
      const maxLen = num(param.max_items);
      if (minLen !== undefined && values.length < minLen) return { ok: false, error: `needs at least ${minLen} item${minLen === 1 ? "" : "s"}`, value: values };
      if (maxLen !== undefined && values.length > maxLen) return { ok: false, error: `takes at most ${maxLen} item${maxLen === 1 ? "" : "s"}`, value: values };
      if (outOfBounds) return { ok: false, error: outOfBounds, value: values };
      return { ok: true, value: values };
    }
    default:
      return { ok: true, value: text };
  }
}

const NULL_WORDS = new Set(["null", "none", "keep"]);

/** PyTorch's "int or tuple": `3`, `3, 1` / `[3, 1]` (one per dimension), a word (`same`), null items. */
function parseSize(param: ParamSchema, text: string): ParseResult {
  const words = (param.choices ?? []).map(String);
  if (words.includes(text)) return { ok: true, value: text };
  const dims = num(param.dims);
  const listed = /[,\s[\]()]/.test(text);
  const wordHint = words.length ? `, or ${words.join(" or ")}` : "";
  const shape = dims ? `one whole number or ${dims} like ${Array.from({ length: dims }, () => "3").join(", ")}` : "a whole number or a list like 2, 3";
  if (!listed) {
    const r = parseNumber(param, text, true);
    if (!r.ok && r.value === undefined) return { ok: false, error: `must be ${shape}${wordHint}` };
    return r;
  }
  const parts = text.replace(/^[[(]|[\])]$/g, "").split(/[\s,]+/).filter(Boolean);
  const values: (number | null)[] = [];
  let outOfBounds: string | null = null;
  for (const [i, part] of parts.entries()) {
    if (param.item_nullable && NULL_WORDS.has(part.toLowerCase())) {
      values.push(null);
      continue;
    }
    const r = parseNumber(param, part, true);
    if (!r.ok && r.value === undefined) return { ok: false, error: `must be ${shape}${param.item_nullable ? " (null keeps a size)" : ""}${wordHint}` };
    if (!r.ok) outOfBounds ??= `item ${i + 1} ${r.error}`;
    values.push(r.value as number);
  }
  if (dims !== undefined && values.length !== dims) return { ok: false, error: `needs one number or ${dims} (one per dimension), got ${values.length}`, value: values };
  const minLen = num(param.min_items);
  const maxLen = num(param.max_items);
  if (minLen !== undefined && values.length < minLen) return { ok: false, error: `needs at least ${minLen} item${minLen === 1 ? "" : "s"}`, value: values };
  if (maxLen !== undefined && values.length > maxLen) return { ok: false, error: `takes at most ${maxLen} item${maxLen === 1 ? "" : "s"}`, value: values };
  if (outOfBounds) return { ok: false, error: outOfBounds, value: values };
  return { ok: true, value: values };
}

/** How a "size" field shows a value: one number for every dimension, one per dimension, or a word. */
export type SizeMode = { mode: "one" } | { mode: "each" } | { mode: "word"; word: string };

/** The form state of a "size" field for a value in the spec (undefined: the default). */
export function sizeModeOf(param: ParamSchema, value: unknown): SizeMode {
  const shown = value === undefined ? param.default : value;
  if (typeof shown === "string" && (param.choices ?? []).map(String).includes(shown)) return { mode: "word", word: shown };
  return Array.isArray(shown) ? { mode: "each" } : { mode: "one" };
}

/** The per-dimension boxes of a "size" field: `dims` texts (one number repeated when it is one). */
export function sizeParts(param: ParamSchema, text: string): string[] {
  const dims = num(param.dims) ?? 1;
  const parts = text.replace(/^[[(]|[\])]$/g, "").split(/[\s,]+/).filter(Boolean);
  if (parts.length === 1) return Array.from({ length: dims }, () => parts[0]);
  return Array.from({ length: dims }, (_, i) => parts[i] ?? "");
}

/** The text a "size" field means after the user picks a mode (keeping the number typed so far). */
export function sizeTextFor(param: ParamSchema, mode: SizeMode, text: string): string {
  if (mode.mode === "word") return mode.word;
  const words = (param.choices ?? []).map(String);
  const numbers = words.includes(text) ? "" : text;
  const parts = numbers.replace(/^[[(]|[\])]$/g, "").split(/[\s,]+/).filter(Boolean);
  const dims = num(param.dims);
  const fallback = typeof param.default === "number" ? String(param.default) : "";
  if (mode.mode === "one") return parts[0] ?? fallback;
  if (dims === undefined) return parts.length ? parts.join(", ") : fallback;
  const first = parts[0] ?? fallback;
  return Array.from({ length: dims }, (_, i) => parts[parts.length === 1 ? 0 : i] ?? first).join(", ");
}

/** Checks a value already in the spec (loaded or pasted) against its schema. */
export function checkValue(param: ParamSchema, value: unknown): string | null {
  if (value === undefined) return param.required ? "is required" : null;
  const r = parseParam(param, typeof value === "boolean" ? value : formatValue(param, value));
  return r.ok ? null : r.error;
}
