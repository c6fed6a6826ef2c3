// What the "Start from" choice loads: the team's runs, the chosen run's checkpoints, and the plan
// of what loads from the chosen checkpoint into this revision.
import { useEffect, useState } from "react";
import { ApiError } from "../../api/client";
import { runsApi } from "../api";
import { type InitMode, type InitPlan, fetchInitPlan } from "../initPlan";
import type { Checkpoint, Run } from "../types";

/** The team's runs to start from (not the queued ones), once a checkpoint start is chosen; null while loading. */
export function useSourceRuns(on: boolean, team: number | null): Run[] | null {
  const [runs, setRuns] = useState<Run[] | null>(null);
  useEffect(() => {
    if (!on || team === null) return;
    let live = true;
    runsApi.runs(team).then(
      (list) => live && setRuns(list.filter((r) => r.status !== "queued")),
      () => live && setRuns([]),
    );
    return () => {
      live = false;
    };
  }, [on, team]);
  return runs;
}

/** The available checkpoints of run `runId`; null while loading (or no run chosen). */
export function useCheckpoints(runId: number | null): Checkpoint[] | null {
  const [checkpoints, setCheckpoints] = useState<Checkpoint[] | null>(null);
  useEffect(() => {
    setCheckpoints(null);
    if (runId === null) return;
    let live = true;
    runsApi.checkpoints(runId).then(
      (list) => live && setCheckpoints(list.filter((c) => c.available)),
      () => live && setCheckpoints([]),
    );
    return () => {
      live = false;
    };
  }, [runId]);
  return checkpoints;
}

export interface PlanQuestion {
  graphId: number;
  revision: number;
  runId: number | null;
  checkpoint: string;
  mode: InitMode;
  /** A resume is checked against the new run's epochs (null: not given). */
  resumeEpochs: number | null;
}

/**
 * Asks for the plan of the chosen start whenever the choice changes, handing it to `onPlan` (null
 * while it is asked for, or when there is nothing to ask); returns why it could not be had.
 */
export function useInitPlan(q: PlanQuestion, onPlan: (plan: InitPlan | null) => void): string | null {
  const [planError, setPlanError] = useState<string | null>(null);
  const { graphId, revision, runId, checkpoint, mode, resumeEpochs } = q;
  useEffect(() => {
    setPlanError(null);
    onPlan(null);
    if (runId === null || !checkpoint) return;
    const abort = new AbortController();
    const body = { graph: graphId, revision, from_run: runId, checkpoint, mode, ...(resumeEpochs ? { epochs: resumeEpochs } : {}) };
    fetchInitPlan(body, abort.signal).then(onPlan, (e) => {
      if (abort.signal.aborted) return;
      const fields = e instanceof ApiError && e.fields ? Object.values(e.fields).flat().map(String) : [];
      setPlanError(fields.length ? fields.join(" ") : (e as Error).message);
    });
    return () => abort.abort();
    // onPlan is the dialog's dispatch of the plan: stable.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [graphId, revision, runId, checkpoint, mode, resumeEpochs]);
  return planError;
}
