// The new-sweep form's search space: one row per dimension (a config path or a node's parameter),
// the keys it offers (from the training-config form and the graph's nodes with the op catalog),
// the rows as the `space` JSON of POST /api/sweeps/, and the server's 400 fields mapped back.
import type { NodeSpec, OpSchema } from "../api/types";
import type { ConfigField } from "../runs/configForm";
import type { SearchSpace, SpaceDimension } from "./types";

export type SpaceKind = SpaceDimension["type"];

/** One row of the form; every number is the text typed. */
export interface SpaceRow {
  key: string;
  type: SpaceKind;
  low: string;
  high: string;
  step: string;
  log: boolean;
  /** Categorical: the choices, comma separated ("64, 128, 256", "adam, sgd"). */
  choices: string;
}

/** The parts of a row an error can sit at. */
export type RowPart = "key" | "type" | "low" | "high" | "step" | "log" | "choices";
export type RowErrors = Partial<Record<RowPart, string[]>>;

export function emptyRow(): SpaceRow {
  return { key: "", type: "float", low: "", high: "", step: "", log: false, choices: "" };
}

/** A key the form offers, with the row it starts (type and a sensible range). */
export interface KeyOption {
  key: string;
  label: string;
  row: SpaceRow;
}

function fmt(n: number): string {
  return String(Number(n.toPrecision(6)));
}

/** Ranges a person would search first for the well-known config fields. */
const CONFIG_PRESETS: Record<string, Partial<SpaceRow>> = {
  "optimizer.lr": { type: "float", low: "0.0001", high: "0.1", log: true },
  "optimizer.weight_decay": { type: "float", low: "0.000001", high: "0.01", log: true },
  "optimizer.momentum": { type: "float", low: "0.5", high: "0.99" },
  batch_size: { type: "categorical", choices: "16, 32, 64" },
  epochs: { type: "int", low: "3", high: "10", step: "1" },
  label_smoothing: { type: "float", low: "0", high: "0.2" },
  grad_accumulation: { type: "categorical", choices: "1, 2, 4" },
  "scheduler.warmup_steps": { type: "int", low: "0", high: "100", step: "10" },
};

/** The config fields a sweep can search: numbers and choices of the training form. */
export function configKeyOptions(fields: ConfigField[]): KeyOption[] {
  const out: KeyOption[] = [];
  for (const f of fields) {
    if (f.kind === "bool" || f.kind === "text" || f.path.endsWith(".enabled")) continue;
    const row = emptyRow();
    row.key = f.path;
    if (f.kind === "choice") {
      row.type = "categorical";
      row.choices = (f.choices ?? []).filter((c) => c !== "").join(", ");
    } else {
      row.type = f.kind === "int" ? "int" : "float";
      if (f.min !== undefined) row.low = fmt(f.min);
      if (f.max !== undefined) row.high = fmt(f.max);
      if (f.kind === "int") row.step = "1";
    }
    out.push({ key: f.path, label: `${f.label} (${f.path})`, row: { ...row, ...CONFIG_PRESETS[f.path] } });
  }
  return out;
}

/** Each node parameter of the graph a sweep can search (`nodes.fc1.out_features`), from the catalog. */
export function nodeKeyOptions(nodes: NodeSpec[], ops: OpSchema[]): KeyOption[] {
  const byName = new Map(ops.map((o) => [o.name, o]));
  const out: KeyOption[] = [];
  for (const node of nodes) {
    const op = byName.get(node.op);
    if (!op) continue;
    for (const p of op.params ?? []) {
      if (!["int", "float", "choice", "bool"].includes(p.type)) continue;
      const current = node.params?.[p.name] ?? p.default;
      const row = emptyRow();
      row.key = `nodes.${node.id}.${p.name}`;
      if (p.type === "choice" || p.type === "bool") {
        row.type = "categorical";
        row.choices = p.type === "bool" ? "true, false" : (p.choices ?? []).join(", ");
      } else if (p.type === "int") {
        const v = typeof current === "number" ? current : (p.min ?? 1);
        // Widths: a list of powers around the current one reads best ({64, 128, 256}).
        row.type = "categorical";
        row.choices = [Math.max(p.min ?? 1, Math.round(v / 2)), v, v * 2].filter((x, i, a) => a.indexOf(x) === i).join(", ");
      } else {
        const v = typeof current === "number" ? current : 0;
        row.type = "float";
        row.low = fmt(p.min ?? 0);
        row.high = fmt(p.max ?? (v > 0 ? v * 2 : 1));
      }
      out.push({ key: row.key, label: `${node.id}.${p.name} (${node.op})`, row });
    }
  }
  return out;
}

/** One typed choice: a number, true/false/null, else the text itself. */
export function parseChoice(text: string): string | number | boolean | null {
  const t = text.trim();
  if (t === "true") return true;
  if (t === "false") return false;
  if (t === "null" || t === "none") return null;
  if (t !== "" && Number.isFinite(Number(t))) return Number(t);
  return t;
}

function num(text: string): number | null {
  const t = text.trim();
  if (t === "") return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : null;
}

/** The rows as the `space` JSON, or the problems by row index and part. */
export function spaceFromRows(rows: SpaceRow[]): { space: SearchSpace; errors: Record<number, RowErrors> } {
  const space: SearchSpace = {};
  const errors: Record<number, RowErrors> = {};
  const problem = (i: number, part: RowPart, msg: string) => {
    ((errors[i] ??= {})[part] ??= []).push(msg);
  };
  const seen = new Set<string>();
  rows.forEach((r, i) => {
    const key = r.key.trim();
    if (!key) problem(i, "key", "Choose a config field or a node's parameter.");
    else if (seen.has(key)) problem(i, "key", "This key is searched twice.");
    seen.add(key);
    if (r.type === "categorical") {
      const choices = r.choices.split(",").map((c) => c.trim()).filter((c) => c !== "").map(parseChoice);
      if (choices.length === 0) problem(i, "choices", "Give at least one choice.");
      else if (new Set(choices.map((c) => JSON.stringify(c))).size !== choices.length) problem(i, "choices", "A choice is listed twice.");
      if (key && !errors[i]) space[key] = { type: "categorical", choices };
      return;
    }
    const low = num(r.low);
    const high = num(r.high);
    if (low === null) problem(i, "low", "Must be a number.");
    if (high === null) problem(i, "high", "Must be a number.");
    if (low !== null && high !== null && !(low < high)) problem(i, "high", "Must be above the low end.");
    if (r.log && low !== null && low <= 0) problem(i, "low", "A log scale starts above 0.");
    if (r.type === "int") {
      if (low !== null && !Number.isInteger(low)) problem(i, "low", "Must be a whole number.");
      if (high !== null && !Number.isInteger(high)) problem(i, "high", "Must be a whole number.");
      const step = r.step.trim() === "" ? 1 : num(r.step);
      if (step === null || !Number.isInteger(step) || step < 1) problem(i, "step", "A whole number, 1 or more.");
      if (r.log && step !== null && step !== 1) problem(i, "step", "A log scale needs step 1.");
      if (key && !errors[i]) space[key] = { type: "int", low: low!, high: high!, step: step!, log: r.log };
      return;
    }
    if (key && !errors[i]) space[key] = { type: "float", low: low!, high: high!, log: r.log };
  });
  return { space, errors };
}

/** The space JSON as rows again (a sweep shown or copied). */
export function rowsFromSpace(space: SearchSpace): SpaceRow[] {
  return Object.entries(space).map(([key, d]) => {
    const row = { ...emptyRow(), key, type: d.type };
    if (d.type === "categorical") row.choices = d.choices.map((c) => String(c)).join(", ");
    else {
      row.low = String(d.low);
      row.high = String(d.high);
      row.log = !!d.log;
      if (d.type === "int") row.step = String(d.step ?? 1);
    }
    return row;
  });
}

const PARTS: RowPart[] = ["type", "low", "high", "step", "log", "choices"];

export interface MappedSweepErrors {
  /** Messages at a row part (`space.<key>[.<part>]`). */
  rows: Record<number, RowErrors>;
  /** Messages at a field of the sweep form: name, dataset, strategy, budget, objective.metric, ... */
  form: Record<string, string[]>;
  /** `config.<path>` (the base config): keyed by the config path. */
  config: Record<string, string[]>;
  /** `graph` / `graph.<node>`: the graph does not fit, in words. */
  graph: string[];
  general: string[];
}

/**
 * Maps a 400's fields onto the form: `space.<key>` (the longest row key that matches) with an
 * optional part (`.low`, `.choices`, ...), `config.<path>` to the base config's fields (`knownConfig`),
 * `graph.<node>` to the graph's problems, the sweep's own fields (`formFields`) to themselves.
 */
export function mapSweepErrors(
  fields: Record<string, unknown> | null | undefined,
  rows: SpaceRow[],
  formFields: string[],
  knownConfig: string[],
): MappedSweepErrors {
  const out: MappedSweepErrors = { rows: {}, form: {}, config: {}, graph: [], general: [] };
  const keys = rows.map((r) => r.key.trim());
  for (const [field, raw] of Object.entries(fields ?? {})) {
    const messages = (Array.isArray(raw) ? raw : [raw]).map((m) => (typeof m === "string" ? m : JSON.stringify(m)));
    for (const msg of messages) {
      if (field.startsWith("space.")) {
        const rest = field.slice(6);
        let best = -1;
        keys.forEach((k, i) => {
          if (k && (rest === k || rest.startsWith(`${k}.`)) && (best < 0 || k.length > keys[best].length)) best = i;
        });
        if (best >= 0) {
          const tail = rest.slice(keys[best].length + 1);
          const part = (PARTS as string[]).includes(tail) ? (tail as RowPart) : "key";
          ((out.rows[best] ??= {})[part] ??= []).push(msg);
        } else (out.form.space ??= []).push(`${rest}: ${msg}`);
      } else if (field === "space") (out.form.space ??= []).push(msg);
      else if (field.startsWith("config.") && knownConfig.includes(field.slice(7))) (out.config[field.slice(7)] ??= []).push(msg);
      else if (field === "graph") out.graph.push(msg);
      else if (field.startsWith("graph.")) out.graph.push(`node ${field.slice(6)}: ${msg}`);
      else if (formFields.includes(field)) (out.form[field] ??= []).push(msg);
      else if (formFields.includes(field.split(".")[0])) (out.form[field.split(".")[0]] ??= []).push(`${field}: ${msg}`);
      else out.general.push(field === "non_field_errors" || field === "detail" ? msg : `${field}: ${msg}`);
    }
  }
  return out;
}
