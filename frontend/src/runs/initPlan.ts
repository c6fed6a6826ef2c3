// Starting a run from another run's checkpoint: the choice (run, checkpoint, mode), the server's
// plan of which parameters load (POST /api/runs/init-plan/, no side effects) and how it reads,
// node by node, before anything is queued.
import { apiRequest } from "../api/client";
import type { Schema } from "../api/types";
import { formatShape } from "../format";

/** fine-tune: load what matches, initialise the rest; resume: continue with optimizer + schedule. */
export type InitMode = "finetune" | "resume";

/** What POST /api/runs/ takes as `init`. */
export interface InitChoice {
  run: number;
  checkpoint: string;
  mode: InitMode;
}

export type PlanParameter = Schema<"PlanParameter">;

/** The engine's InitPlan JSON plus `problems` ({field, message}: why a create would refuse the start). */
export type InitPlan = Pick<Schema<"InitPlanAnswer">, "loaded" | "mismatched" | "new" | "unused"> & { problems?: unknown[] };

export type InitPlanBody = Schema<"InitPlanRequestRequest">;

export function fetchInitPlan(body: InitPlanBody, signal?: AbortSignal): Promise<InitPlan> {
  return apiRequest<InitPlan>("POST", "/api/runs/init-plan/", body, signal);
}

export type PlanRowKind = "mismatched" | "new" | "unused";

export interface PlanRow {
  parameter: string;
  kind: PlanRowKind;
  /** In words: "checkpoint [64, 16] → graph [128, 16]", "new [128], initialised", "not used". */
  text: string;
}

export interface PlanNode {
  node: string;
  rows: PlanRow[];
}

export interface PlanView {
  loaded: number;
  /** Nodes with a parameter that does not load as it is, in the order the plan names them. */
  nodes: PlanNode[];
  problems: string[];
  /** True when every parameter of the graph loads from the checkpoint. */
  exact: boolean;
}

/** The last part of a parameter name (`fc1.weight` -> `weight`), for a row under its node. */
function shortName(node: string, parameter: string): string {
  return parameter.startsWith(`${node}.`) ? parameter.slice(node.length + 1) : parameter;
}

function problemText(p: unknown): string {
  if (typeof p === "string") return p;
  if (p && typeof p === "object") {
    const o = p as Record<string, unknown>;
    const msg = typeof o.message === "string" ? o.message : JSON.stringify(p);
    return typeof o.field === "string" && o.field ? `${o.field}: ${msg}` : msg;
  }
  return String(p);
}

/** The plan grouped by node, in words. */
export function planView(plan: InitPlan): PlanView {
  const byNode = new Map<string, PlanRow[]>();
  const add = (p: PlanParameter, kind: PlanRowKind, text: string) => {
    const rows = byNode.get(p.node) ?? [];
    rows.push({ parameter: shortName(p.node, p.parameter), kind, text });
    byNode.set(p.node, rows);
  };
  for (const p of plan.mismatched ?? [])
    add(p, "mismatched", `checkpoint ${formatShape(p.checkpoint_shape ?? [])} → graph ${formatShape(p.graph_shape ?? [])}: initialised`);
  for (const p of plan.new ?? []) add(p, "new", `new ${formatShape(p.shape ?? [])}: initialised`);
  for (const p of plan.unused ?? []) add(p, "unused", `${formatShape(p.shape ?? [])} in the checkpoint: not used`);
  const nodes = [...byNode.entries()].map(([node, rows]) => ({ node, rows }));
  const problems = (plan.problems ?? []).map(problemText);
  return { loaded: plan.loaded?.length ?? 0, nodes, problems, exact: nodes.length === 0 };
}
