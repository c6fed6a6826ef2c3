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

export type FieldKind = "int" | "float" | "choice" | "bool" | "text";

export interface ConfigField {
  /** Dotted path in the config (`optimizer.lr`); also the form field's id. */
  path: string;
  label: string;
  kind: FieldKind;
  choices?: string[];
  /** How a choice reads when it is not its own value ("" -> "automatic"). */
  choiceLabels?: Record<string, string>;
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
const BEST = "best.metric";
const CLASS_WEIGHTS = "class_weights";
const WATCHED = ["val/loss", "val/accuracy", "val/f1", "val/mae", "val/r2"];

/** Losses and errors go down; accuracy, F1 and R² go up. */
export function metricMode(metric: string): "min" | "max" {
  return /loss|mae|rmse|mse/.test(metric) ? "min" : "max";
}

interface FieldEntry {
  path: string;
  label: string;
  help?: string;
  when?: (v: FormValues) => boolean;
  choices?: string[];
  choiceLabels?: Record<string, string>;
  kind?: FieldKind;
  /** Left off the form (not an error) when the engine's schema has no such field. */
  optional?: boolean;
}

/** What several data-parallel ranks cost and when they pay (measured: bench/, the training docs). */
export const PROCESSES_HELP =
  "Data-parallel ranks, one device each; batch size must split evenly over them. It pays for large models or batches on several GPUs; " +
  "on CPUs or for a small model the ranks mostly wait on each other (2 CPU ranks were 11.6× slower than 1 on a small MLP): keep 1.";

/** The fields the dialog shows, in order; kinds and bounds come from the schema. */
const FIELD_LIST: FieldEntry[] = [
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
    choices: WATCHED,
    when: (v) => v[EARLY] === true,
  },
  { path: "early_stopping.patience", label: "Patience (epochs)", when: (v) => v[EARLY] === true },
  {
    path: BEST,
    label: "Best checkpoint by",
    choices: ["", ...WATCHED],
    choiceLabels: { "": "automatic" },
    help: "Which weights the default export holds (automatic: the early-stopping metric, else val/loss).",
    optional: true,
  },
  { path: "best.mode", label: "Best is the", when: (v) => (v[BEST] ?? "") !== "", optional: true },
  { path: "grad_accumulation", label: "Gradient accumulation", help: "Micro-batches per optimizer step.", optional: true },
  { path: "label_smoothing", label: "Label smoothing", help: "Cross-entropy only; 0 is none.", optional: true },
  { path: "scheduler.warmup_steps", label: "Warm-up steps", help: "Linear warm-up of the learning rate before the schedule.", optional: true },
  {
    path: CLASS_WEIGHTS,
    label: "Class weights",
    kind: "text",
    help: "Empty (none), balanced, or one weight per class: 1, 2, 0.5.",
    optional: true,
  },
  { path: "processes", label: "Processes", help: PROCESSES_HELP, optional: true },
  {
    path: "nodes",
    label: "Nodes",
    help: "Machines the run trains on, each running Processes ranks (a Kubernetes Job; the deployment must run NETLOOM_RUNNER=kubernetes). 1 here.",
    optional: true,
  },
  { path: "log_every", label: "Log every (steps)", help: "How often the training loss is recorded." },
  { path: "seed", label: "Seed" },
  {
    path: "deterministic",
    label: "Deterministic",
    help: "Deterministic kernels only: a GPU run then repeats bit for bit (a little slower). CPU runs repeat without it.",
    optional: true,
  },
];

function fieldFrom(root: TrainConfigSchema["schema"], entry: FieldEntry): ConfigField | null {
  if (entry.path === EARLY) return { path: EARLY, label: entry.label, kind: "bool", help: "Stop when the watched metric has not improved for a few epochs." };
  const s: JsonSchema | null = schemaAt(root, entry.path);
  if (!s) {
    if (entry.optional) return null;
    throw new Error(`the training config has no field ${entry.path}; update FIELD_LIST in configForm.ts`);
  }
  const choices = entry.kind === "text" ? undefined : (entry.choices ?? (s.enum as string[] | undefined));
  const kind: FieldKind = entry.kind ?? (choices ? "choice" : s.type === "integer" ? "int" : s.type === "boolean" ? "bool" : "float");
  const min = s.minimum ?? s.exclusiveMinimum;
  const max = s.maximum ?? s.exclusiveMaximum;
  return {
    path: entry.path,
    label: entry.label,
    kind,
    choices,
    choiceLabels: entry.choiceLabels,
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
  const fields = FIELD_LIST.map((entry) => fieldFrom(answer.schema, entry)).filter((f): f is ConfigField => f !== null);
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
    // `best` and `class_weights` default to null: "automatic" and "none".
    if (BEST in values && !valueAt(answer.defaults ?? {}, "best")) values[BEST] = "";
    if ("best.mode" in values && values["best.mode"] === "") values["best.mode"] = "min";
    if (CLASS_WEIGHTS in values) values[CLASS_WEIGHTS] = classWeightsText(valueAt(answer.defaults ?? {}, CLASS_WEIGHTS));
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

/** The class-weights text of a config value: "", "balanced" or "1, 2, 0.5". */
export function classWeightsText(value: unknown): string {
  if (Array.isArray(value)) return value.join(", ");
  return typeof value === "string" ? value : "";
}

/** The config value of the class-weights text, or the problem. */
export function parseClassWeights(text: string): { value: "balanced" | number[] | null } | { error: string } {
  const t = text.trim();
  if (t === "") return { value: null };
  if (t.toLowerCase() === "balanced") return { value: "balanced" };
  const parts = t.split(/[\s,;]+/).filter(Boolean);
  const numbers = parts.map(Number);
  if (numbers.some((n) => !Number.isFinite(n) || n < 0)) return { error: "Write balanced, or one weight (a number, 0 or more) per class." };
  return { value: numbers };
}

/** Checks one value against its field; returns the problem or null. */
export function checkValue(f: ConfigField, raw: string | boolean): string | null {
  if (f.kind === "bool") return null;
  if (f.kind === "text") {
    const parsed = f.path === CLASS_WEIGHTS ? parseClassWeights(String(raw)) : { value: raw };
    return "error" in parsed ? parsed.error : null;
  }
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
    if (f.path === CLASS_WEIGHTS) {
      const parsed = parseClassWeights(String(raw));
      if ("value" in parsed && parsed.value !== null) config[CLASS_WEIGHTS] = parsed.value;
      continue;
    }
    const value = f.kind === "int" || f.kind === "float" ? Number(String(raw).trim()) : f.kind === "bool" ? Boolean(raw) : String(raw);
    setPath(config, f.path, value);
  }
  if (values[EARLY] === true) {
    const early = (config.early_stopping ?? {}) as Record<string, unknown>;
    early.mode = metricMode(String(early.metric ?? "val/loss"));
    config.early_stopping = early;
  } else delete config.early_stopping;
  // "automatic": no `best` at all (the engine decides).
  if ((config.best as Record<string, unknown> | undefined)?.metric === "") delete config.best;
  return { config, errors };
}

/** The form's values after one field changed (picking the best metric also picks its direction). */
export function withValue(values: FormValues, path: string, value: string | boolean): FormValues {
  const next = { ...values, [path]: value };
  if (path === BEST && typeof value === "string" && value) next["best.mode"] = metricMode(value);
  return next;
}

/** The form values of a run's config ("Run again", fine-tune, resume): fields it lacks keep their defaults. */
export function valuesFromConfig(form: ConfigForm, config: Record<string, unknown>): FormValues {
  const values = form.defaultValues();
  for (const f of form.fields) {
    if (f.path === EARLY) {
      values[EARLY] = config.early_stopping !== null && typeof config.early_stopping === "object";
      continue;
    }
    const v = valueAt(config, f.path);
    if (f.path === CLASS_WEIGHTS) values[f.path] = classWeightsText(v);
    else if (f.path === BEST) values[f.path] = typeof v === "string" ? v : "";
    else if (v === undefined || v === null) continue;
    else values[f.path] = f.kind === "bool" ? Boolean(v) : String(v);
  }
  return values;
}

function deletePath(target: Record<string, unknown>, path: string): void {
  const parts = path.split(".");
  let node: unknown = target;
  for (const part of parts.slice(0, -1)) {
    if (typeof node !== "object" || node === null) return;
    node = (node as Record<string, unknown>)[part];
  }
  if (typeof node === "object" && node !== null) delete (node as Record<string, unknown>)[parts[parts.length - 1]];
}

function mergeInto(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(source)) {
    const old = target[k];
    if (v && typeof v === "object" && !Array.isArray(v) && old && typeof old === "object" && !Array.isArray(old))
      mergeInto(old as Record<string, unknown>, v as Record<string, unknown>);
    else target[k] = v;
  }
}

/**
 * The config of the form laid over a base config (a run's, for "Run again"): what the form shows
 * wins, what it hides or leaves unset (early stopping off, automatic best, no class weights) goes
 * back to the engine's default, and everything the form does not know (loss, checkpoints) stays.
 */
export function configOver(base: Record<string, unknown>, built: Record<string, unknown>, form: ConfigForm, values: FormValues): Record<string, unknown> {
  const out = JSON.parse(JSON.stringify(base ?? {})) as Record<string, unknown>;
  for (const f of form.fields) if (f.path !== EARLY) deletePath(out, f.path);
  if (values[EARLY] !== true) delete out.early_stopping;
  if (!built.best) delete out.best;
  mergeInto(out, built);
  return out;
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
