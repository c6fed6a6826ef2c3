// "Start from": new weights, or a checkpoint of a run (source run, checkpoint, mode) and its plan.
import { useId, useState } from "react";
import type { InitChoice, InitMode, InitPlan } from "../initPlan";
import { InitPlanView } from "./InitPlanView";
import { useCheckpoints, useInitPlan, useSourceRuns } from "./useInitSources";

export interface InitChooserProps {
  team: number | null;
  graphId: number;
  revision: number;
  value: InitChoice | null;
  onChange: (init: InitChoice | null) => void;
  /** The plan of the chosen start (null until it is known). */
  plan: InitPlan | null;
  onPlan: (plan: InitPlan | null) => void;
  errors: string[];
  /** The new run's epochs: a resume is checked against them. */
  epochs: number | null;
}

export function InitChooser({ team, graphId, revision, value, onChange, plan, onPlan, errors, epochs }: InitChooserProps) {
  const ids = useId();
  const [on, setOn] = useState(value !== null);
  const runId = value?.run ?? null;
  const checkpoint = value?.checkpoint ?? "";
  const mode = value?.mode ?? "finetune";
  const resumeEpochs = mode === "resume" && epochs !== null && Number.isInteger(epochs) && epochs > 0 ? epochs : null;
  const runs = useSourceRuns(on, team);
  const checkpoints = useCheckpoints(runId);
  const planError = useInitPlan({ graphId, revision, runId, checkpoint, mode, resumeEpochs }, onPlan);

  const source = runs?.find((r) => r.id === runId);
  return (
    <fieldset className="init-chooser" data-testid="train-init">
      <legend>Start from</legend>
      <div className="row">
        <label className="row">
          <input
            type="radio"
            name={`${ids}-from`}
            data-testid="init-scratch"
            checked={!on}
            onChange={() => {
              setOn(false);
              onChange(null);
            }}
          />
          new weights
        </label>
        <label className="row">
          <input type="radio" name={`${ids}-from`} data-testid="init-checkpoint" checked={on} onChange={() => setOn(true)} />
          a checkpoint of a run
        </label>
      </div>
      {on && (
        <div className="init-fields">
          <div className="field">
            <label htmlFor={`${ids}-run`}>Run</label>
            <select
              id={`${ids}-run`}
              data-testid="init-run"
              value={runId ?? ""}
              onChange={(e) => onChange(e.target.value ? { run: Number(e.target.value), checkpoint: "", mode } : null)}
            >
              <option value="">{runs === null ? "Loading runs…" : "Choose a run"}</option>
              {/* The run chosen elsewhere stays listed even before the list has come. */}
              {runId !== null && !source && <option value={runId}>#{runId}</option>}
              {runs?.map((r) => (
                <option key={r.id} value={r.id}>
                  #{r.id} {r.graph_name} rev {r.revision} · {r.status}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${ids}-ckpt`}>Checkpoint</label>
            <select
              id={`${ids}-ckpt`}
              data-testid="init-checkpoint-name"
              value={checkpoint}
              disabled={runId === null}
              onChange={(e) => runId !== null && onChange({ run: runId, checkpoint: e.target.value, mode })}
            >
              <option value="">{runId !== null && checkpoints === null ? "Loading…" : "Choose a checkpoint"}</option>
              {checkpoint && !checkpoints?.some((c) => c.name === checkpoint) && <option value={checkpoint}>{checkpoint}</option>}
              {checkpoints?.map((c) => (
                <option key={c.name} value={c.name}>
                  {c.name} · step {c.step} · epoch {c.epoch.toFixed(1)}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${ids}-mode`}>Mode</label>
            <select
              id={`${ids}-mode`}
              data-testid="init-mode"
              value={mode}
              disabled={runId === null}
              onChange={(e) => runId !== null && onChange({ run: runId, checkpoint, mode: e.target.value as InitMode })}
            >
              <option value="finetune">fine-tune (load what matches)</option>
              <option value="resume">resume for more epochs</option>
            </select>
          </div>
        </div>
      )}
      {on && runId !== null && checkpoint && !plan && !planError && <p className="muted">Checking what loads…</p>}
      {planError && (
        <p className="error" role="alert" data-testid="init-plan-error">
          {planError}
        </p>
      )}
      {plan && <InitPlanView plan={plan} />}
      {errors.map((m) => (
        <p key={m} className="field-error" role="alert" data-testid="error-init">
          {m}
        </p>
      ))}
    </fieldset>
  );
}
