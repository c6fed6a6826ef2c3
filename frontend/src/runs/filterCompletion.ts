// Completion of the runs filter expression (pure; tested in vitest): the field names the team's
// runs have (metrics.<name>, best.<name>, config.<path>, nodes.<node>.<param>, from
// GET /api/runs/columns/ and the loaded runs) and the fixed ones, the operators after a field, the
// statuses after `status =`, and/or after a value: whole expressions for a datalist.
import { type GraphParams, finalValues, flattenConfig, revisionKey } from "./runsTable";
import type { Run } from "./types";

/** Fields every run has (webapp/runs/query.py). */
export const FIXED_FIELDS = ["tags", "status", "name", "created_at", "finished_at", "sweep", "graph", "dataset", "id"];

/** The words of the language after which a field may start. */
const KEYWORDS = new Set(["and", "or", "not"]);

type FieldRun = Pick<Run, "config" | "summary" | "final_metrics" | "best_checkpoint" | "graph" | "revision">;

/** The fields the loaded runs have, sorted, then the fixed ones. */
export function filterFields(runs: readonly FieldRun[], graphs: GraphParams = new Map()): string[] {
  const found = new Set<string>();
  for (const run of runs) {
    for (const key of Object.keys(finalValues(run))) found.add(`metrics.${key}`);
    for (const key of Object.keys(run.best_checkpoint?.metrics ?? {})) found.add(`best.${key}`);
    for (const path of Object.keys(flattenConfig(run.config))) found.add(`config.${path}`);
    for (const path of Object.keys(graphs.get(revisionKey(run)) ?? {})) if (path.startsWith("nodes.")) found.add(path);
  }
  return [...[...found].sort(), ...FIXED_FIELDS];
}

/** The comparison operators of the language (webapp/runs/query.py), the likeliest first. */
export const OPERATORS = [">", "<", "=", "!=", ">=", "<=", "~"];

/** The values `status` takes. */
export const STATUSES = ["succeeded", "failed", "running", "queued", "cancelled", "interrupted", "pruned"];

/** The fields of `a`, then those of `b` not in `a` (the server's names and the loaded runs'). */
export function mergeFields(a: readonly string[], b: readonly string[]): string[] {
  const seen = new Set(a);
  return [...a, ...b.filter((f) => !seen.has(f))];
}

/** The word being typed at the end of `text` (a field's beginning), and where it starts. */
export function lastWord(text: string): { start: number; word: string } {
  const match = /[A-Za-z_][A-Za-z0-9_./\-:@]*$/.exec(text);
  if (!match) return { start: text.length, word: "" };
  return { start: match.index, word: match[0] };
}

/** True when a field may start at `start` of `text`: at the beginning, after (, or after and/or/not. */
function fieldExpected(text: string, start: number): boolean {
  const before = text.slice(0, start).trimEnd();
  if (before === "" || before.endsWith("(")) return true;
  const word = /([A-Za-z]+)$/.exec(before)?.[1]?.toLowerCase();
  return word !== undefined && KEYWORDS.has(word) && /(^|[\s(])[A-Za-z]+$/.test(before);
}

/**
 * Whole expressions that complete the field being typed at the end of `text` (at most `limit`),
 * e.g. "status = \"failed\" and met" -> ["status = \"failed\" and metrics.val/accuracy", ...].
 * Nothing when the end is not a field's beginning (a value, an operator) or the field is complete.
 */
export function completions(text: string, fields: readonly string[], limit = 20): string[] {
  const { start, word } = lastWord(text);
  if (!fieldExpected(text, start)) return nextWords(text, fields, limit);
  const lower = word.toLowerCase();
  const head = text.slice(0, start);
  return fields
    .filter((f) => f.toLowerCase().startsWith(lower) && f !== word)
    .slice(0, limit)
    .map((f) => head + f);
}

/** A field then a space: its operators; `status <op> `: the statuses; a value then a space: and/or. */
function nextWords(text: string, fields: readonly string[], limit: number): string[] {
  if (!/\s$/.test(text)) return [];
  const trimmed = text.trimEnd();
  const field = lastWord(trimmed);
  if (field.word && fieldExpected(trimmed, field.start) && (fields.includes(field.word) || /^(metrics|best|config|nodes)\./.test(field.word)))
    return OPERATORS.map((op) => `${trimmed} ${op} `).slice(0, limit);
  if (/(^|[\s(])status\s*(=|!=)$/.test(trimmed)) return STATUSES.map((s) => `${trimmed} "${s}"`).slice(0, limit);
  // After a value (a number, a "string", true/false/null or a closing parenthesis).
  if (/(\d|"|\)|\btrue|\bfalse|\bnull)$/i.test(trimmed) && /(<=|>=|!=|=|<|>|~)/.test(trimmed))
    return [`${trimmed} and `, `${trimmed} or `];
  return [];
}
