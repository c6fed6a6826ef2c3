// The train dialog's rules, apart from React: when training may start, which dataset is offered
// first, what a run's settings fill in, and how a 400's fields divide between the dialog's sections.
import type { RunCreateBody } from "../api";
import { type ConfigForm, type FormValues, valuesFromConfig } from "../configForm";
import type { InitChoice } from "../initPlan";
import type { Dataset, Run } from "../types";

/** What the editor knows about the canvas when it offers "Train". */
export interface TrainReadiness {
  savedRevision: number | null;
  dirty: boolean;
  /** The live check's verdict on the canvas (null while it is not known yet). */
  valid: boolean | null;
}

/** Why training cannot start yet, or null when it can. */
export function trainBlocker(p: TrainReadiness): string | null {
  if (p.savedRevision === null) return "Save the graph first";
  if (p.dirty) return "Save your changes first";
  if (p.valid === null) return "Checking the graph…";
  if (!p.valid) return "Fix the graph's errors first";
  return null;
}

/** The dataset to offer first: the first whose feature shape is the graph's (only) input shape. */
export function defaultDataset(ready: Dataset[], inputShapes: number[][] | null): Dataset | undefined {
  const shape = inputShapes?.length === 1 ? inputShapes[0] : null;
  const fits = shape && ready.find((d) => JSON.stringify(d.summary?.feature_shape ?? null) === JSON.stringify(shape));
  return fits || ready[0];
}

/** The form values a run's settings give (resume: twice the epochs, since it continues). */
export function valuesForRun(form: ConfigForm, run: Pick<Run, "config">, init?: InitChoice | null): FormValues {
  const values = valuesFromConfig(form, run.config);
  const epochs = Number(run.config.epochs);
  if (init?.mode === "resume" && Number.isInteger(epochs) && epochs > 0) values.epochs = String(epochs * 2);
  return values;
}

/** The data settings of a run to train again on: its split and transforms. */
export function recipeOf(run: Pick<Run, "recipe"> | null | undefined): Pick<RunCreateBody, "split" | "transforms"> {
  const out: Pick<RunCreateBody, "split" | "transforms"> = {};
  const recipe = (run?.recipe ?? {}) as Record<string, unknown>;
  if (recipe.split && typeof recipe.split === "object") out.split = recipe.split;
  if (recipe.transforms && typeof recipe.transforms === "object") out.transforms = recipe.transforms;
  return out;
}

/** Splits a 400's fields into the start-from ones (`init`, `init.*`, `from_run`, `checkpoint`) and the rest. */
export function splitInitErrors(fields: Record<string, unknown> | null | undefined): { init: string[]; rest: Record<string, unknown> } {
  const init: string[] = [];
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields ?? {})) {
    if (k === "init" || k.startsWith("init.") || k === "from_run" || k === "checkpoint") {
      const where = k.startsWith("init.") ? k.slice(5) : k === "init" ? "" : k;
      for (const m of Array.isArray(v) ? v : [v]) init.push(where ? `${where}: ${String(m)}` : String(m));
    } else rest[k] = v;
  }
  return { init, rest };
}

/**
 * The dataset the form starts on: the run's own for "Run again" and a start from its checkpoints;
 * none for a run without one (imported weights), whose user must pick the data to train on.
 */
export function datasetOfRun(run: Pick<Run, "dataset"> | null | undefined): string {
  return run?.dataset != null ? String(run.dataset) : "";
}

/**
 * What the priority field sends: nothing when blank (the server's default, 0), a whole number as a
 * number, anything else as typed, so that the server's 400 on `priority` says what is wrong.
 */
export function priorityBody(text: string): Pick<RunCreateBody, "priority"> {
  const t = text.trim();
  if (t === "") return {};
  return { priority: /^[+-]?\d+$/.test(t) ? Number(t) : t };
}

/** The `priority` messages of a 400, taken out of `fields` (they show next to the priority field). */
export function takePriorityErrors(fields: Record<string, unknown>): string[] {
  const v = fields.priority;
  delete fields.priority;
  return v === undefined ? [] : (Array.isArray(v) ? v : [v]).map(String);
}

/** The `config.freeze` messages of a 400, taken out of `fields` (they show with the freeze choice). */
export function takeFreezeErrors(fields: Record<string, unknown>): string[] {
  const keys = Object.keys(fields).filter((k) => k === "config.freeze" || k.startsWith("config.freeze."));
  const messages = keys.flatMap((k) => {
    const v = fields[k];
    return (Array.isArray(v) ? v : [v]).map(String);
  });
  for (const k of keys) delete fields[k];
  return messages;
}

/** The epochs the form holds, as a number (null when the field is blank): a resume is checked against them. */
export function epochsOf(values: FormValues): number | null {
  return values.epochs !== undefined && String(values.epochs).trim() !== "" ? Number(values.epochs) : null;
}

/** The dialog's heading: what starting will do. */
export function dialogTitle(revision: number, init: InitChoice | null, from: Pick<Run, "id"> | null): string {
  if (init) return init.mode === "resume" ? `Resume run #${init.run} for more epochs` : `Fine-tune revision ${revision}`;
  return from ? `Run #${from.id} again` : `Train revision ${revision}`;
}
