// Every kept checkpoint of a run (GET /api/runs/<id>/checkpoints/, kept fresh by the run stream):
// kind, step, epoch, its validation metrics, which one the default export holds; per checkpoint the
// downloads, an evaluation on the test split, and a new run from it (fine-tune or resume).
import { useId, useState } from "react";
import { fromJob } from "../jobs/jobState";
import { evaluateAsJob } from "./evaluateJob";
import { runsApi } from "./api";
import { formatMetric } from "./format";
import type { InitChoice, InitMode } from "./initPlan";
import type { EvaluationAnswer } from "./judgeTypes";
import type { Checkpoint, Run } from "./types";

export type CheckpointRow = Checkpoint;

export type CheckpointFormat = "safetensors" | "python" | "zip" | "onnx";

/** Download URL of one checkpoint's export. */
export function checkpointExportUrl(runId: number, name: string, format: CheckpointFormat): string {
  return `/api/runs/${runId}/checkpoints/${encodeURIComponent(name)}/export/?format=${format}`;
}

const FILES: { format: CheckpointFormat; label: string }[] = [
  { format: "safetensors", label: "safetensors" },
  { format: "python", label: "model.py" },
  { format: "zip", label: "zip" },
  { format: "onnx", label: "ONNX" },
];

/** "1 earlier checkpoint was pruned" / "59 earlier checkpoints were pruned". */
export function prunedLine(n: number): string {
  return n === 1 ? "1 earlier checkpoint was pruned" : `${n} earlier checkpoints were pruned`;
}

/** The validation metrics worth a column: val/* scalars first, in a stable order. */
export function metricColumns(rows: CheckpointRow[]): string[] {
  const keys = new Set<string>();
  for (const r of rows) for (const [k, v] of Object.entries(r.metrics ?? {})) if (typeof v === "number" || v === null) keys.add(k);
  const rank = (k: string) => (k === "val/loss" ? 0 : k.startsWith("val/") ? 1 : 2);
  return [...keys].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b)).slice(0, 3);
}

function evaluationLine(e: EvaluationAnswer): string {
  if (e.accuracy !== undefined && e.accuracy !== null) return `test accuracy ${(e.accuracy * 100).toFixed(1)}% (${e.rows} rows)`;
  if (e.mae !== undefined && e.mae !== null) return `test MAE ${formatMetric(e.mae)}${e.rmse != null ? ` · RMSE ${formatMetric(e.rmse)}` : ""} (${e.rows} rows)`;
  return `evaluated on ${e.rows} test rows`;
}

export function CheckpointsPanel({
  run,
  checkpoints,
  canEdit,
  onStartFrom,
}: {
  run: Run;
  checkpoints: CheckpointRow[];
  canEdit: boolean;
  /** Open the train dialog with this start ("Fine-tune from this", "Resume for more epochs"). */
  onStartFrom: (init: InitChoice) => void;
}) {
  const ids = useId();
  const [evaluations, setEvaluations] = useState<Record<string, string>>({});
  const kept = checkpoints.filter((c) => c.available);
  const pruned = checkpoints.length - kept.length;
  const columns = metricColumns(kept);

  async function evaluate(name: string) {
    setEvaluations((e) => ({ ...e, [name]: "evaluating…" }));
    try {
      const answer = await evaluateAsJob(run.id, name, (job) =>
        setEvaluations((e) => ({ ...e, [name]: `evaluating… ${fromJob(job).label.toLowerCase()}` })),
      );
      setEvaluations((e) => ({ ...e, [name]: evaluationLine(answer) }));
    } catch (err) {
      setEvaluations((e) => ({ ...e, [name]: (err as Error).message }));
    }
  }

  // An explanation of the first test sample by these weights; the explain panel lists it when the
  // stream says it is done.
  async function explain(name: string) {
    setEvaluations((e) => ({ ...e, [name]: "asking for an explanation…" }));
    try {
      const answer = await runsApi.explain(run.id, { checkpoint: name, index: 0 });
      setEvaluations((e) => ({ ...e, [name]: `explanation #${answer.id} of test sample 0 (${answer.method}) is ${answer.status}; the explanations panel shows it` }));
    } catch (err) {
      setEvaluations((e) => ({ ...e, [name]: (err as Error).message }));
    }
  }

  const start = (checkpoint: string, mode: InitMode) => onStartFrom({ run: run.id, checkpoint, mode });

  return (
    <section className="panel checkpoints-panel" aria-labelledby={`${ids}-h`} data-testid="checkpoints-panel">
      <h2 id={`${ids}-h`}>Checkpoints</h2>
      {kept.length === 0 ? (
        <p className="muted">None yet.</p>
      ) : (
        <table className="table small" data-testid="checkpoints">
          <thead>
            <tr>
              <th scope="col">checkpoint</th>
              <th scope="col">step</th>
              <th scope="col">epoch</th>
              {columns.map((k) => (
                <th key={k} scope="col">
                  {k}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {kept.map((c) => (
              <CheckpointRowView
                key={c.name}
                run={run}
                c={c}
                columns={columns}
                canEdit={canEdit}
                evaluation={evaluations[c.name]}
                onEvaluate={() => void evaluate(c.name)}
                onExplain={() => void explain(c.name)}
                onStart={(mode) => start(c.name, mode)}
              />
            ))}
          </tbody>
        </table>
      )}
      {/* A long run prunes most of its checkpoints: one line says so instead of a long list. */}
      {pruned > 0 && (
        <p className="muted small" data-testid="checkpoints-pruned">
          {prunedLine(pruned)}
        </p>
      )}
    </section>
  );
}

function CheckpointRowView({
  run,
  c,
  columns,
  canEdit,
  evaluation,
  onEvaluate,
  onExplain,
  onStart,
}: {
  run: Run;
  c: CheckpointRow;
  columns: string[];
  canEdit: boolean;
  evaluation: string | undefined;
  onEvaluate: () => void;
  onExplain: () => void;
  onStart: (mode: InitMode) => void;
}) {
  return (
    <>
      <tr data-testid={`checkpoint-${c.name}`} data-kind={c.kind ?? ""} data-default={String(!!c.default)}>
        <th scope="row">
          {c.name}
          {c.kind && c.kind !== "epoch" && <span className={`badge kind-${c.kind}`}> {c.kind}</span>}
          {c.default && (
            <span className="badge default-export" data-testid="checkpoint-default" title="The run's default export holds these weights">
              {" "}
              export
            </span>
          )}
        </th>
        <td>{c.step}</td>
        <td>{c.epoch.toFixed(1)}</td>
        {columns.map((k) => (
          <td key={k}>{formatMetric(c.metrics?.[k])}</td>
        ))}
      </tr>
      <tr className="checkpoint-actions" data-testid={`checkpoint-actions-${c.name}`}>
        <td colSpan={3 + columns.length}>
          <span className="muted">download </span>
          {FILES.map((f, i) => (
            <span key={f.format}>
              {i > 0 && " · "}
              <a href={checkpointExportUrl(run.id, c.name, f.format)} download data-testid={`checkpoint-download-${f.format}`}>
                {f.label}
              </a>
            </span>
          ))}
          {/* Weights imported from elsewhere have no dataset to evaluate, explain or resume on:
              fine-tuning (on a dataset the new run names) is what they are for. */}
          {canEdit && run.dataset === null && (
            <>
              {" | "}
              <button type="button" className="link" data-testid="checkpoint-finetune" onClick={() => onStart("finetune")}>
                Fine-tune from this
              </button>
            </>
          )}
          {canEdit && run.dataset !== null && (
            <>
              {" | "}
              <button type="button" className="link" data-testid="checkpoint-evaluate" disabled={evaluation === "evaluating…"} onClick={onEvaluate}>
                Evaluate
              </button>{" "}
              <button type="button" className="link" data-testid="checkpoint-explain" onClick={onExplain}>
                Explain
              </button>{" "}
              <button type="button" className="link" data-testid="checkpoint-finetune" onClick={() => onStart("finetune")}>
                Fine-tune from this
              </button>{" "}
              <button type="button" className="link" data-testid="checkpoint-resume" onClick={() => onStart("resume")}>
                Resume for more epochs
              </button>
            </>
          )}
          {evaluation && (
            <span className="checkpoint-evaluation" data-testid="checkpoint-evaluation">
              {" "}
              {evaluation}
            </span>
          )}
        </td>
      </tr>
    </>
  );
}
