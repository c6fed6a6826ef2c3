// "Train" in the editor, "Run again" and the checkpoints' "Fine-tune" / "Resume" on a run page: pick
// a dataset and the training settings, optionally start from a checkpoint (the plan of what loads is
// listed node by node first), start a run, open its page. The state lives in `reducer.ts`; each
// section of the form is a component of its own.
import { useCallback, useEffect, useId, useReducer, useRef, useState } from "react";
import { navigate } from "../../router";
import { runsApi } from "../api";
import type { InitChoice, InitPlan } from "../initPlan";
import type { Run } from "../types";
import { ConfigFields } from "./ConfigFields";
import { DatasetField } from "./DatasetField";
import { graphFitProblems } from "./fit";
import { FreezeChooser } from "./FreezeChooser";
import { InitChooser } from "./InitChooser";
import { PriorityField } from "./PriorityField";
import { initialTrainState, onRunsData, pickedDataset, planBlocks, startDisabled, trainReducer } from "./reducer";
import { RevisionField } from "./RevisionField";
import { dialogTitle, epochsOf } from "./rules";
import { StartActions } from "./StartActions";
import { failedStart, startStep } from "./submit";
import { useTrainData } from "./useTrainData";
import { VersionField } from "./VersionField";

export interface TrainDialogProps {
  graphId: number;
  revision: number;
  onClose: () => void;
  /** "Run again" and starts from a checkpoint: the run whose dataset, config and split fill the form. */
  from?: Run | null;
  /** Start from this checkpoint ("Fine-tune from this", "Resume for more epochs"). */
  init?: InitChoice | null;
}

export function TrainDialog({ graphId, revision: firstRevision, onClose, from = null, init: initialInit = null }: TrainDialogProps) {
  const ids = useId();
  const dialog = useRef<HTMLDialogElement>(null);
  const [state, dispatch] = useReducer(trainReducer, null, () => initialTrainState(firstRevision, from, initialInit));
  const { revision, form, errors, init } = state;
  // A run without a dataset (imported weights): nothing is picked for the user.
  const mustPickDataset = from !== null && from.dataset == null;
  useTrainData(graphId, revision, from, initialInit, mustPickDataset, dispatch);
  const onPlan = useCallback((plan: InitPlan | null) => dispatch({ type: "planChanged", plan }), []);

  useEffect(() => {
    dialog.current?.showModal();
  }, []);

  const picked = pickedDataset(state);
  // The version pinned: a run opened from keeps its own on its own data; else the newest (null).
  const [version, setVersion] = useState<number | null>(null);
  const sameData = onRunsData(state, from);
  const fromVersion = sameData ? (from?.dataset_version?.number ?? null) : null;
  useEffect(() => setVersion(fromVersion), [state.datasetId, fromVersion]);
  const fitProblems = picked && state.graph ? graphFitProblems(state.graph, picked.summary ?? {}) : [];

  async function start() {
    const step = startStep(state, graphId, from);
    if (!step || !form) return;
    if ("refuse" in step) {
      dispatch(step.refuse);
      return;
    }
    dispatch({ type: "submitting" });
    try {
      const run = await runsApi.createRun(version !== null ? { ...step.body, dataset_version: version } : step.body);
      onClose();
      navigate(`/runs/${run.id}`);
    } catch (e) {
      dispatch(failedStart(e, form));
    }
  }

  return (
    <dialog
      ref={dialog}
      className="train-dialog"
      data-testid="train-dialog"
      aria-labelledby={`${ids}-title`}
      onClose={onClose}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          void start();
        }}
      >
        <h2 id={`${ids}-title`}>{dialogTitle(revision, init, from)}</h2>
        {from && state.revisions.length > 1 && (
          <RevisionField id={`${ids}-revision`} from={from} revisions={state.revisions} revision={revision} onPick={(n) => dispatch({ type: "revisionPicked", revision: n })} />
        )}
        <DatasetField
          id={`${ids}-dataset`}
          datasets={state.datasets}
          datasetId={state.datasetId}
          picked={picked}
          from={from}
          sameData={sameData}
          mustPick={mustPickDataset}
          errors={errors.fields.dataset}
          fit={fitProblems}
          onPick={(datasetId) => dispatch({ type: "datasetPicked", datasetId })}
        />
        <VersionField id={`${ids}-dataset-version`} datasetId={state.datasetId} value={version} onChange={setVersion} errors={errors.fields.dataset_version} />
        <InitChooser
          team={state.team}
          graphId={graphId}
          revision={revision}
          value={init}
          onChange={(v) => dispatch({ type: "initChanged", init: v })}
          plan={state.plan}
          onPlan={onPlan}
          errors={state.initErrors}
          epochs={epochsOf(state.values)}
        />
        {form === null && (
          <p className="muted" data-testid="train-config-loading">
            Loading the training settings…
          </p>
        )}
        {form && <ConfigFields form={form} values={state.values} errors={errors.fields} prefix={ids} onChange={(path, value) => dispatch({ type: "valueChanged", path, value })} />}
        <PriorityField id={`${ids}-priority`} value={state.priority} errors={errors.fields.priority} onChange={(priority) => dispatch({ type: "priorityChanged", priority })} />
        <FreezeChooser nodes={state.nodes} chosen={state.freeze} onChange={(freeze) => dispatch({ type: "freezeChanged", freeze })} errors={errors.fields.freeze} />
        <StartActions errors={errors} busy={state.busy} disabled={startDisabled(state)} planBlocks={planBlocks(state)} onClose={onClose} />
      </form>
    </dialog>
  );
}
