// How good is the model and where is it wrong: the engine's evaluation of the test split
// (GET /api/runs/<id>/evaluation/[?checkpoint=]) for the weights the user picks: the downloads'
// weights (stored when the run succeeded) or any other kept checkpoint (computed on request, as a
// job on the workers whose progress shows like every job's). Every figure names the checkpoint it
// is about.
import { useEffect, useId, useMemo, useState } from "react";
import { ApiError } from "../api/client";
import { JobProgress } from "../jobs/JobProgress";
import { type JobView, fromJob } from "../jobs/jobState";
import { runsApi } from "./api";
import { checkpointOptions, evaluatedWords } from "./evaluationChoice";
import { EvaluationReport } from "./EvaluationReport";
import { evaluateAsJob } from "./evaluateJob";
import type { EvaluationAnswer } from "./judgeTypes";
import type { Checkpoint, DatasetSummary, Run } from "./types";

/** Image data (C,H,W or H,W) shows thumbnails; tables show their raw rows. */
export function isImageData(summary: DatasetSummary | null): boolean {
  const shape = summary?.feature_shape ?? [];
  return shape.length >= 2 && !summary?.columns?.length;
}

export function EvaluationPanel({ run, summary, canEdit, checkpoints = [] }: { run: Run; summary: DatasetSummary | null; canEdit: boolean; checkpoints?: Checkpoint[] }) {
  const ids = useId();
  // "": the stored evaluation of the downloads' weights; else a checkpoint's name.
  const [choice, setChoice] = useState("");
  const [evaluation, setEvaluation] = useState<EvaluationAnswer | null>(null);
  const [missing, setMissing] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [job, setJob] = useState<JobView | null>(null);
  const trained = run.status === "succeeded";
  const options = useMemo(() => checkpointOptions(run, checkpoints), [run, checkpoints]);
  const about = evaluatedWords(choice, run, checkpoints);

  useEffect(() => {
    if (!trained) return;
    let live = true;
    setEvaluation(null);
    setMissing(false);
    setError(null);
    runsApi.evaluation(run.id, choice || undefined).then(
      (e) => live && setEvaluation(e),
      (e) => {
        if (!live) return;
        if (e instanceof ApiError && e.status === 404) setMissing(true);
        else setError((e as Error).message);
      },
    );
    return () => {
      live = false;
    };
  }, [run.id, trained, choice]);

  async function compute() {
    setBusy(true);
    setError(null);
    try {
      setEvaluation(await evaluateAsJob(run.id, choice || undefined, (asked) => setJob(fromJob(asked))));
      setMissing(false);
      setJob(null);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="panel evaluation" aria-labelledby={`${ids}-h`} data-testid="evaluation-panel">
      <h2 id={`${ids}-h`}>How good is it</h2>
      {!trained && <p className="muted">The evaluation on the test split appears once the run has succeeded.</p>}
      {trained && (
        <div className="field">
          <label htmlFor={`${ids}-checkpoint`}>Weights evaluated</label>
          <select id={`${ids}-checkpoint`} data-testid="evaluation-checkpoint" value={choice} onChange={(e) => setChoice(e.target.value)}>
            {options.map((o) => (
              <option key={o.value} value={o.value}>
                {o.label}
              </option>
            ))}
          </select>
        </div>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {trained && missing && !evaluation && (
        <p className="muted" data-testid="evaluation-missing">
          {choice ? `Checkpoint ${choice} has not been evaluated yet.` : "This run has no evaluation yet."}{" "}
          {canEdit && (
            <button type="button" className="link" data-testid="evaluation-compute" disabled={busy} onClick={() => void compute()}>
              {busy ? "Computing…" : "Evaluate it now"}
            </button>
          )}
        </p>
      )}
      {job && <JobProgress view={job} what="The evaluation" testid="evaluation-job" barLabel="Evaluating on the test split" live />}
      {trained && !evaluation && !missing && !error && <p className="muted">Loading…</p>}
      {evaluation && <EvaluationReport run={run} evaluation={evaluation} images={isImageData(summary)} about={about} />}
    </section>
  );
}
