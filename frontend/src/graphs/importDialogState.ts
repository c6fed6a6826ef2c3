// The import dialog's state: a spec file and, optionally, its weights, chosen in either order; the
// graph's name (the spec file's name until the user types one); and each refusal beside its field.
import type { GraphSpec } from "../api/types";
import { importedSpec, weightsProblem } from "./importSpec";

/** A chosen weights file, as far as the dialog needs to know it. */
export interface WeightsFile {
  name: string;
  size: number;
}

export interface ImportState<W extends WeightsFile = WeightsFile> {
  spec: { fileName: string; spec: GraphSpec } | null;
  weights: W | null;
  name: string;
  /** True once the user typed a name: a later spec file no longer renames the graph. */
  nameTyped: boolean;
  errors: { spec?: string; weights?: string; name?: string; form?: string; /** Each key that does not fit. */ weightsDetail?: string[] };
}

export type ImportAction<W extends WeightsFile = WeightsFile> =
  | { type: "spec"; fileName: string; text: string }
  | { type: "weights"; file: W | null }
  | { type: "name"; name: string }
  | { type: "refused"; message: string; fields: Record<string, unknown> | null };

export function initialImport<W extends WeightsFile = WeightsFile>(): ImportState<W> {
  return { spec: null, weights: null, name: "", nameTyped: false, errors: {} };
}

function text(value: unknown): string {
  return (Array.isArray(value) ? value : [value]).map(String).join(" ");
}

/** Where the server's 400 belongs: the weights (`file`), the spec (`spec.*`, `graph`) or the name. */
export function refusalErrors(message: string, fields: Record<string, unknown> | null): ImportState["errors"] {
  const errors: ImportState["errors"] = {};
  for (const [field, value] of Object.entries(fields ?? {})) {
    if (field === "file") {
      errors.weights = text(value);
      if (Array.isArray(value) && value.length > 1) errors.weightsDetail = value.map(String);
    } else if (field === "name") errors.name = text(value);
    else if (field === "graph" || field === "spec" || field.startsWith("spec.")) errors.spec = `${errors.spec ? `${errors.spec} ` : ""}${text(value)}`;
  }
  // A refusal of the file with a summary message: the message says it best.
  if (errors.weights && message && !errors.weights.includes(message)) errors.weights = message;
  if (!errors.weights && !errors.name && !errors.spec) errors.form = message;
  return errors;
}

export function importReducer<W extends WeightsFile>(state: ImportState<W>, action: ImportAction<W>): ImportState<W> {
  switch (action.type) {
    case "spec":
      try {
        const parsed = importedSpec(action.fileName, action.text, state.nameTyped ? state.name : "");
        return { ...state, spec: { fileName: action.fileName, spec: parsed.spec }, name: parsed.name, errors: { ...state.errors, spec: undefined, form: undefined } };
      } catch (e) {
        return { ...state, spec: null, errors: { ...state.errors, spec: (e as Error).message } };
      }
    case "weights": {
      const problem = weightsProblem(action.file);
      return { ...state, weights: problem ? null : action.file, errors: { ...state.errors, weights: problem ?? undefined, weightsDetail: undefined, form: undefined } };
    }
    case "name":
      return { ...state, name: action.name, nameTyped: true, errors: { ...state.errors, name: undefined } };
    case "refused":
      return { ...state, errors: refusalErrors(action.message, action.fields) };
  }
}

/** Why Import is not offered yet (null: it is). */
export function importBlocked(state: ImportState): string | null {
  if (!state.spec) return "Choose the spec file first.";
  if (!state.name.trim()) return "Give the graph a name.";
  return null;
}
