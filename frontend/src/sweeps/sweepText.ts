// How a sweep reads in words: its progress, strategy and a trial's parameters.
import { formatMetric } from "../runs/format";
import type { Sweep } from "./types";

const STRATEGIES: Record<string, string> = { grid: "grid", random: "random search", tpe: "TPE (Bayesian)" };
const PRUNERS: Record<string, string> = { none: "no pruning", median: "median pruning", successive_halving: "successive halving", hyperband: "Hyperband" };

/** "TPE (Bayesian), median pruning". */
export function strategyText(s: Pick<Sweep, "strategy" | "pruner">): string {
  return `${STRATEGIES[s.strategy] ?? s.strategy}, ${PRUNERS[s.pruner] ?? s.pruner}`;
}

const FINISHED = new Set(["complete", "pruned", "failed", "cancelled"]);

/** How many trials have ended (from the trials when the answer has them, else from the counts). */
export function finishedTrials(s: Pick<Sweep, "progress" | "trials">): number {
  if (s.trials?.length) return s.trials.filter((t) => FINISHED.has(t.state)).length;
  const p = s.progress;
  // `done` counts every trial that ended (complete, pruned, failed, cancelled).
  return Math.min(p.total, p.done);
}

/** "5 / 8 trials done · 2 pruned · 1 running · 0 queued". */
export function progressText(s: Pick<Sweep, "progress" | "budget" | "trials">): string {
  const p = s.progress;
  const total = p.total || s.budget;
  const parts = [`${finishedTrials(s)} / ${total} trials finished`];
  if (p.pruned) parts.push(`${p.pruned} pruned`);
  if (p.failed) parts.push(`${p.failed} failed`);
  if (p.running) parts.push(`${p.running} running`);
  if (p.queued) parts.push(`${p.queued} queued`);
  return parts.join(" · ");
}

/** "optimizer.lr=0.0031, fc1.out_features=128" (node keys without their `nodes.` prefix). */
export function paramText(params: Record<string, unknown>): string {
  return Object.entries(params)
    .map(([k, v]) => `${k.startsWith("nodes.") ? k.slice(6) : k}=${typeof v === "number" ? formatMetric(v) : String(v)}`)
    .join(", ");
}
