// The training-config form: fields, bounds and defaults come from the engine's TrainConfig JSON
// Schema, served by GET /api/runs/config-schema/ (never bundled: the engine is the one copy);
// the server's 400 field errors are mapped back onto the fields.
import { apiRequest } from "../api/client";

export interface JsonSchema {
  type?: string;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  anyOf?: JsonSchema[];
  $ref?: string;
  properties?: Record<string, JsonSchema>;
  title?: string;
  description?: string;
}

/** GET /api/runs/config-schema/: TrainConfig.model_json_schema() and TrainConfig() as JSON. */
export interface TrainConfigSchema {
  schema: JsonSchema & { $defs?: Record<string, JsonSchema> };
  defaults: Record<string, unknown>;
}

/** The schema of a dotted config path (`optimizer.lr`), nullable wrappers unwrapped; null if unknown. */
export function schemaAt(root: TrainConfigSchema["schema"], path: string): (JsonSchema & { nullable: boolean }) | null {
  const deref = (s: JsonSchema): JsonSchema => (s.$ref ? (root.$defs?.[s.$ref.split("/").pop()!] ?? {}) : s);
  let node: JsonSchema = root;
  let nullable = false;
  for (const part of path.split(".")) {
    const props = deref(node).properties;
    if (!props || !(part in props)) return null;
    node = props[part];
    nullable = false;
    if (node.anyOf) {
      nullable = node.anyOf.some((a) => a.type === "null");
      const inner = node.anyOf.find((a) => a.type !== "null");
      // Keep the outer default (null) but take type and bounds from the non-null branch.
      node = { ...deref(inner ?? {}), default: node.default ?? deref(inner ?? {}).default };
    } else node = { ...deref(node), default: node.default ?? deref(node).default };
  }
  return { ...node, nullable };
}

export type FieldKind = "int" | "float" | "choice" | "bool";

export interface ConfigField {
  /** Dotted path in the config (`optimizer.lr`); also the form field's id. */
  path: string;
  label: string;
  kind: FieldKind;
  choices?: string[];
  min?: number;
  max?: number;
  minExclusive?: boolean;
  maxExclusive?: boolean;
  help?: string;
  /** Shown only when this returns true for the current values. */
  when?: (values: FormValues) => boolean;
}

export type FormValues = Record<string, string | boolean>;

const EARLY = "early_stopping.enabled";

/** The fields the dialog shows, in order; kinds and bounds come from the schema. */
const FIELD_LIST: { path: string; label: string; help?: string; when?: (v: FormValues) => boolean; choices?: string[] }[] = [
  { path: "epochs", label: "Epochs" },
  { path: "batch_size", label: "Batch size" },
  { path: "optimizer.name", label: "Optimizer" },
  { path: "optimizer.lr", label: "Learning rate" },
  { path: "optimizer.weight_decay", label: "Weight decay" },
  { path: "optimizer.momentum", label: "Momentum", when: (v) => v["optimizer.name"] === "sgd" || v["optimizer.name"] === "rmsprop" },
  { path: "scheduler.name", label: "LR schedule" },
  { path: "precision", label: "Precision", help: "bf16/fp16 need a GPU to be faster; fp16 uses a gradient scaler." },
  { path: EARLY, label: "Early stopping" },
  {
    path: "early_stopping.metric",
    label: "Watch",
    choices: ["val/loss", "val/accuracy", "val/f1", "val/mae", "val/r2"],
    when: (v) => v[EARLY] === true,
  },
  { path: "early_stopping.patience", label: "Patience (epochs)", when: (v) => v[EARLY] === true },
  { path: "log_every", label: "Log every (steps)", help: "How often the training loss is recorded." },
  { path: "seed", label: "Seed" },
];

function fieldFrom(root: TrainConfigSchema["schema"], entry: (typeof FIELD_LIST)[number]): ConfigField {
  if (entry.path === EARLY) return { path: EARLY, label: entry.label, kind: "bool", help: "Stop when the watched metric has not improved for a few epochs." };
  const s = schemaAt(root, entry.path);
  if (!s) throw new Error(`the training config has no field ${entry.path}; update FIELD_LIST in configForm.ts`);
  const choices = entry.choices ?? (s.enum as string[] | undefined);
  const kind: FieldKind = choices ? "choice" : s.type === "integer" ? "int" : s.type === "boolean" ? "bool" : "float";
  const min = s.minimum ?? s.exclusiveMinimum;
  const max = s.maximum ?? s.exclusiveMaximum;
  return {
    path: entry.path,
    label: entry.label,
    kind,
    choices,
    min,
    max,
    minExclusive: s.exclusiveMinimum !== undefined,
    maxExclusive: s.exclusiveMaximum !== undefined,
    help: entry.help ?? s.description,
    when: entry.when,
  };
}

function valueAt(obj: Record<string, unknown>, path: string): unknown {
  let node: unknown = obj;
  for (const part of path.split(".")) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** The form made from one schema answer: its fields, defaults and config builder. */
export interface ConfigForm {
  fields: ConfigField[];
  /** The engine's defaults as form values (with overrides, e.g. a short first run). */
  defaultValues: (overrides?: FormValues) => FormValues;
  /** The config JSON of the form (only shown fields), or the problems keyed by field path. */
  buildConfig: (values: FormValues) => { config: Record<string, unknown>; errors: Record<string, string[]> };
}

/** Builds the form's fields (kinds, bounds, choices, defaults) from the engine's schema answer. */
export function configForm(answer: TrainConfigSchema): ConfigForm {
  const fields = FIELD_LIST.map((entry) => fieldFrom(answer.schema, entry));
  const defaultValues = (overrides: FormValues = {}): FormValues => {
    const values: FormValues = {};
    for (const f of fields) {
      if (f.path === EARLY) values[f.path] = false;
      else {
        const given = valueAt(answer.defaults ?? {}, f.path);
        const d = given !== undefined ? given : schemaAt(answer.schema, f.path)?.default;
        values[f.path] = f.kind === "bool" ? Boolean(d) : d === undefined || d === null ? "" : String(d);
      }
    }
    if (values["early_stopping.metric"] === "") values["early_stopping.metric"] = "val/loss";
    return { ...values, ...overrides };
  };
  return { fields, defaultValues, buildConfig: (values) => buildConfig(fields, values) };
}

let schemaRequest: Promise<ConfigForm> | null = null;

/** The form, from GET /api/runs/config-schema/ (asked once per page load; after a failure, again next time). */
export function loadConfigForm(): Promise<ConfigForm> {
  schemaRequest ??= apiRequest<TrainConfigSchema>("GET", "/api/runs/config-schema/").then(configForm, (e: unknown) => {
    schemaRequest = null;
    throw e;
  });
  return schemaRequest;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split(".");
  let node = target;
  for (const part of parts.slice(0, -1)) {
    if (typeof node[part] !== "object" || node[part] === null) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1]] = value;
}

function describeBounds(f: ConfigField): string {
  const parts: string[] = [];
  if (f.min !== undefined) parts.push(`${f.minExclusive ? "greater than" : "at least"} ${f.min}`);
  if (f.max !== undefined) parts.push(`${f.maxExclusive ? "less than" : "at most"} ${f.max}`);
  return parts.join(" and ");
}

/** Checks one value against its field; returns the problem or null. */
export function checkValue(f: ConfigField, raw: string | boolean): string | null {
  if (f.kind === "bool") return null;
  const text = String(raw).trim();
  if (f.kind === "choice") return f.choices && !f.choices.includes(text) ? `Choose one of ${f.choices.join(", ")}.` : null;
  if (text === "") return "Required.";
  const n = Number(text);
  if (!Number.isFinite(n)) return "Must be a number.";
  if (f.kind === "int" && !Number.isInteger(n)) return "Must be a whole number.";
  const low = f.min !== undefined && (f.minExclusive ? n <= f.min : n < f.min);
  const high = f.max !== undefined && (f.maxExclusive ? n >= f.max : n > f.max);
  if (low || high) return `Must be ${describeBounds(f)}.`;
  return null;
}

/** The config JSON of the form (only shown fields), or the problems keyed by field path. */
export function buildConfig(fields: ConfigField[], values: FormValues): { config: Record<string, unknown>; errors: Record<string, string[]> } {
  const config: Record<string, unknown> = {};
  const errors: Record<string, string[]> = {};
  for (const f of fields) {
    if (f.when && !f.when(values)) continue;
    if (f.path === EARLY) continue;
    const raw = values[f.path] ?? "";
    const problem = checkValue(f, raw);
    if (problem) {
      errors[f.path] = [problem];
      continue;
    }
    const value = f.kind === "int" || f.kind === "float" ? Number(String(raw).trim()) : f.kind === "bool" ? Boolean(raw) : String(raw);
    setPath(config, f.path, value);
  }
  if (values[EARLY] === true) {
    const early = (config.early_stopping ?? {}) as Record<string, unknown>;
    const metric = String(early.metric ?? "val/loss");
    // Losses and errors go down; accuracy, F1 and R² go up.
    early.mode = /loss|mae|rmse|mse/.test(metric) ? "min" : "max";
    config.early_stopping = early;
  } else delete config.early_stopping;
  return { config, errors };
}

export interface MappedErrors {
  /** Messages next to a form field (keyed by field path, or "dataset"). */
  fields: Record<string, string[]>;
  /** Why the graph cannot train on the dataset, in words ("node fc2: ..."). */
  graph: string[];
  /** Everything that belongs to no field on the form. */
  general: string[];
}

/**
 * Maps the `fields` of a 400 from POST /api/runs/ onto the form: `config.<path>` to the field of
 * that path (one of `known`, the form's field paths), `graph.<node>` to the graph's problems,
 * `dataset` to the dataset picker; the rest
 * (a field the form does not show, a whole-config problem) is listed as general with its path.
 */
export function mapServerErrors(fields: Record<string, unknown> | null | undefined, known: Iterable<string>): MappedErrors {
  const knownSet = new Set(known);
  const out: MappedErrors = { fields: {}, graph: [], general: [] };
  const push = (bucket: Record<string, string[]>, key: string, msg: string) => {
    (bucket[key] ??= []).push(msg);
  };
  for (const [key, raw] of Object.entries(fields ?? {})) {
    const messages = (Array.isArray(raw) ? raw : [raw]).map((m) => (typeof m === "string" ? m : JSON.stringify(m)));
    for (const msg of messages) {
      if (key === "graph") out.graph.push(msg);
      else if (key.startsWith("graph.")) out.graph.push(`node ${key.slice(6)}: ${msg}`);
      else if (key === "dataset") push(out.fields, "dataset", msg);
      else if (key.startsWith("config.")) {
        const path = key.slice(7);
        if (knownSet.has(path)) push(out.fields, path, msg);
        else if (path === "config" || path === "") out.general.push(msg);
        else out.general.push(`${path}: ${msg}`);
      } else if (key === "config" || key === "non_field_errors") out.general.push(msg);
      else out.general.push(`${key}: ${msg}`);
    }
  }
  return out;
}
