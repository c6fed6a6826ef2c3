// A CSV's columns as the chooser shows them: kept as features or not, gaps and the strategy in
// force, identifiers flagged; and the PATCH options that a change of those choices sends.
import type { Dataset } from "../runs/types";

/** Strategies for a column's empty cells (engine.data.recipe.MissingRule). */
export const NUMERIC_STRATEGIES = ["median", "mean", "most_frequent", "constant", "drop_row", "fail"] as const;
export const CATEGORICAL_STRATEGIES = ["category", "most_frequent", "constant", "drop_row", "fail"] as const;
export const TARGET_STRATEGIES = ["fail", "drop_row"] as const;

export const STRATEGY_LABELS: Record<string, string> = {
  median: "fill with the median",
  mean: "fill with the mean",
  most_frequent: "fill with the most frequent value",
  constant: "fill with a constant",
  drop_row: "leave the row out",
  category: 'keep "(missing)" as its own category',
  fail: "refuse the file",
};

/** What the summary says of one column (the fields this page reads; older servers lack some). */
export interface ColumnFacts {
  name: string;
  kind: string;
  missing: number;
  role: "target" | "feature" | "unused" | null;
  strategy: string;
  fill: number | string | null;
  indicator: boolean;
  idLike: boolean;
  distinct: number | null;
}

/** A column's rule as the options hold it: a strategy name or {strategy, value?, indicator?}. */
export interface MissingRuleOption {
  strategy: string;
  value?: number | string;
  indicator?: boolean;
}

/** A dataset's options as a plain object (the generated type says nothing about their keys). */
export function optionsOf(d: { options?: unknown }): Record<string, unknown> {
  return (d.options ?? {}) as Record<string, unknown>;
}

function str(v: unknown, fallback: string): string {
  return typeof v === "string" ? v : fallback;
}

/** The default strategy of a column (as the engine chooses it). */
export function defaultStrategy(kind: string, isTarget = false): string {
  if (isTarget) return "fail";
  return kind === "numeric" ? "median" : "category";
}

export function strategiesFor(c: Pick<ColumnFacts, "kind" | "role">): readonly string[] {
  if (c.role === "target") return TARGET_STRATEGIES;
  return c.kind === "numeric" ? NUMERIC_STRATEGIES : CATEGORICAL_STRATEGIES;
}

/** The columns of a CSV dataset with what the page shows of each. */
export function columnFacts(d: Pick<Dataset, "summary" | "options">): ColumnFacts[] {
  const chosen = optionsOf(d).target;
  const target = typeof chosen === "string" ? chosen : null;
  return (d.summary?.columns ?? []).map((raw) => {
    const c = raw as Record<string, unknown>;
    const name = str(c.name, "");
    const kind = str(c.kind, "numeric");
    const role = (c.role as ColumnFacts["role"]) ?? (name === target ? "target" : null);
    const fill = c.missing_fill;
    return {
      name,
      kind,
      missing: typeof c.missing === "number" ? c.missing : 0,
      role,
      strategy: str(c.missing_strategy, defaultStrategy(kind, role === "target")),
      fill: typeof fill === "number" || typeof fill === "string" ? fill : null,
      indicator: c.missing_indicator === true,
      idLike: c.id_like === true,
      distinct: typeof c.distinct === "number" ? c.distinct : null,
    };
  });
}

/** The feature columns in force: the options' list, or every column but the target and those left out. */
export function chosenFeatures(d: Pick<Dataset, "summary" | "options">): string[] {
  const listed = optionsOf(d).features;
  const facts = columnFacts(d);
  if (Array.isArray(listed)) return listed.filter((n): n is string => typeof n === "string");
  const target = optionsOf(d).target;
  return facts.filter((c) => c.name !== target).map((c) => c.name);
}

/** The features a new upload or a first target choice would start with: identifiers left out. */
export function suggestedFeatures(d: Pick<Dataset, "summary" | "options">, target: string): string[] {
  return columnFacts(d)
    .filter((c) => c.name !== target && !c.idLike)
    .map((c) => c.name);
}

/** The options PATCH for new choices: the features (in file order) and each changed rule. */
export function optionsPatch(
  d: Pick<Dataset, "summary" | "options">,
  included: ReadonlySet<string>,
  rules: Record<string, MissingRuleOption>,
): Record<string, unknown> {
  const target = optionsOf(d).target;
  const features = columnFacts(d)
    .map((c) => c.name)
    .filter((n) => n !== target && included.has(n));
  const missing: Record<string, MissingRuleOption | string> = {};
  for (const [name, rule] of Object.entries(rules)) {
    const plain = rule.value === undefined && !rule.indicator;
    missing[name] = plain ? rule.strategy : rule;
  }
  const patch: Record<string, unknown> = { features };
  if (Object.keys(missing).length > 0) {
    const stored = (optionsOf(d).missing as Record<string, unknown> | undefined) ?? {};
    patch.missing = { ...stored, ...missing };
  }
  return patch;
}

/** The fitted fill as the page shows it ("41.5", '"oslo"'), or null when there is none to show. */
export function formatFill(c: Pick<ColumnFacts, "strategy" | "fill">): string | null {
  if (c.fill === null || c.strategy === "category") return null;
  return typeof c.fill === "number" ? String(Number(c.fill.toPrecision(6))) : JSON.stringify(c.fill);
}

/** "fill with the median (41.5)", "leave the row out": the strategy in force, with its fitted fill. */
export function describeStrategy(c: Pick<ColumnFacts, "strategy" | "fill" | "indicator">): string {
  const label = STRATEGY_LABELS[c.strategy] ?? c.strategy;
  const fill = formatFill(c);
  return label + (fill === null ? "" : ` (${fill})`) + (c.indicator ? ", with a was-missing column" : "");
}

/** "processing 42%" while a worker reads the file, from the dataset's progress figure. */
export function progressLabel(d: Pick<Dataset, "status"> & { progress?: number | null }): string | null {
  if (d.status !== "processing") return null;
  if (typeof d.progress !== "number") return "queued";
  return `${Math.round(d.progress * 100)}% read`;
}
