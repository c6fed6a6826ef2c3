// The train dialog's state and every change to it: what has loaded, what the user chose, and the
// problems shown next to each section. Pure, so each change can be checked on its own.
import { type ConfigForm, type FormValues, type MappedErrors, withValue } from "../configForm";
import type { InitChoice, InitPlan } from "../initPlan";
import type { Dataset, Run } from "../types";
import type { GraphShapes } from "./fit";
import { datasetOfRun } from "./rules";

export const NO_ERRORS: MappedErrors = { fields: {}, graph: [], general: [] };
const NO_INIT_ERRORS: string[] = [];

export interface TrainState {
  /** The revision to train (opened from a run, the graph's other revisions can be picked). */
  revision: number;
  /** The graph's revisions, newest first (loaded only when opened from a run). */
  revisions: number[];
  /** The team's ready datasets with a target; null while loading. */
  datasets: Dataset[] | null;
  datasetId: string;
  priority: string;
  team: number | null;
  /** The fields come from the engine's schema (GET /api/runs/config-schema/): null while loading. */
  form: ConfigForm | null;
  values: FormValues;
  /** The nodes that can be frozen (those with weights). */
  nodes: string[];
  /** The revision's input shapes and output shapes, checked against the picked dataset; null until known. */
  graph: GraphShapes | null;
  freeze: string[];
  init: InitChoice | null;
  /** What loads from the chosen checkpoint; null until it is known. */
  plan: InitPlan | null;
  initErrors: string[];
  errors: MappedErrors;
  busy: boolean;
}

export type TrainAction =
  | { type: "revisionsLoaded"; revisions: number[] }
  | { type: "revisionPicked"; revision: number }
  | { type: "formLoaded"; form: ConfigForm; values: FormValues }
  | { type: "formFailed"; message: string }
  | { type: "teamKnown"; team: number }
  | { type: "nodesLoaded"; nodes: string[]; graph?: GraphShapes | null }
  /** `first`: the dataset to offer, unless one is chosen already (none: the user must choose). */
  | { type: "datasetsLoaded"; datasets: Dataset[]; first: Dataset | undefined }
  | { type: "loadFailed"; message: string }
  | { type: "datasetPicked"; datasetId: string }
  | { type: "valueChanged"; path: string; value: string | boolean }
  | { type: "priorityChanged"; priority: string }
  | { type: "freezeChanged"; freeze: string[] }
  | { type: "initChanged"; init: InitChoice | null }
  | { type: "planChanged"; plan: InitPlan | null }
  | { type: "initIncomplete" }
  | { type: "refused"; fields: Record<string, string[]> }
  | { type: "submitting" }
  | { type: "failed"; errors: MappedErrors; initErrors: string[] };

/** The dialog as it opens: on `revision`, or filled from the run `from` (and its checkpoint `init`). */
export function initialTrainState(revision: number, from: Run | null, init: InitChoice | null): TrainState {
  return {
    revision,
    revisions: [],
    datasets: null,
    datasetId: datasetOfRun(from),
    priority: "0",
    team: from?.team ?? null,
    form: null,
    values: {},
    nodes: [],
    graph: null,
    freeze: Array.isArray(from?.config.freeze) ? (from!.config.freeze as string[]) : [],
    init,
    plan: null,
    initErrors: NO_INIT_ERRORS,
    errors: NO_ERRORS,
    busy: false,
  };
}

/** A changed value deserves a fresh verdict: the field's old messages go. */
function clearField(errors: MappedErrors, path: string): MappedErrors {
  return errors.fields[path] ? { ...errors, fields: { ...errors.fields, [path]: [] } } : errors;
}

export function trainReducer(state: TrainState, action: TrainAction): TrainState {
  switch (action.type) {
    case "revisionsLoaded":
      return { ...state, revisions: action.revisions };
    case "revisionPicked":
      return { ...state, revision: action.revision, graph: null };
    case "formLoaded":
      return { ...state, form: action.form, values: action.values };
    case "formFailed":
      return { ...state, errors: { ...state.errors, general: [`The training settings could not be loaded: ${action.message}`] } };
    case "teamKnown":
      return { ...state, team: action.team };
    case "nodesLoaded":
      return { ...state, nodes: action.nodes, graph: action.graph ?? null };
    case "datasetsLoaded":
      return { ...state, datasets: action.datasets, datasetId: state.datasetId || (action.first ? String(action.first.id) : "") };
    case "loadFailed":
      return { ...state, errors: { ...NO_ERRORS, general: [action.message] } };
    case "datasetPicked":
      return { ...state, datasetId: action.datasetId, errors: NO_ERRORS };
    case "valueChanged":
      return { ...state, values: withValue(state.values, action.path, action.value), errors: clearField(state.errors, action.path) };
    case "priorityChanged":
      return { ...state, priority: action.priority, errors: clearField(state.errors, "priority") };
    case "freezeChanged":
      return { ...state, freeze: action.freeze };
    case "initChanged":
      return { ...state, init: action.init, initErrors: NO_INIT_ERRORS };
    case "planChanged":
      return { ...state, plan: action.plan };
    case "initIncomplete":
      return { ...state, initErrors: ["Choose the run and the checkpoint to start from, or start from new weights."] };
    case "refused":
      return { ...state, errors: { ...NO_ERRORS, fields: action.fields } };
    case "submitting":
      return { ...state, busy: true, errors: NO_ERRORS, initErrors: NO_INIT_ERRORS };
    case "failed":
      return { ...state, busy: false, errors: action.errors, initErrors: action.initErrors };
  }
}

/** The picked dataset, once the list has come. */
export function pickedDataset(state: TrainState): Dataset | undefined {
  return state.datasets?.find((d) => String(d.id) === state.datasetId);
}

/** Training on the run's own data: again on its split and transforms. */
export function onRunsData(state: TrainState, from: Run | null): boolean {
  return from !== null && from.dataset != null && String(from.dataset) === state.datasetId;
}

/** A start from a checkpoint waits for its plan, and a plan with problems stops it. */
export function planBlocks(state: TrainState): boolean {
  return state.init !== null && (state.plan === null || (state.plan.problems?.length ?? 0) > 0);
}

/** Whether "Start training" is off: busy, still loading, no dataset to train on, or a plan in the way. */
export function startDisabled(state: TrainState): boolean {
  return state.busy || !state.form || !state.datasets?.length || planBlocks(state);
}
