// "Start training": the form checked and turned into POST /api/runs/'s body, and the server's
// refusal sorted back onto the dialog's sections.
import { ApiError } from "../../api/client";
import type { RunCreateBody } from "../api";
import { type ConfigForm, configOver, mapServerErrors } from "../configForm";
import type { Run } from "../types";
import { NO_ERRORS, type TrainAction, type TrainState, onRunsData } from "./reducer";
import { priorityBody, recipeOf, splitInitErrors, takeFreezeErrors, takePriorityErrors } from "./rules";

/** What starting does with the form as it is: show why it cannot, or send this body. */
export type StartStep = { refuse: TrainAction } | { body: RunCreateBody };

/** The step "Start training" takes now (null while the settings have not loaded). */
export function startStep(state: TrainState, graphId: number, from: Run | null): StartStep | null {
  const { form } = state;
  if (!form) return null;
  const { config: built, errors: local } = form.buildConfig(state.values);
  const fields: Record<string, string[]> = { ...local };
  if (!state.datasetId) fields.dataset = ["Choose a dataset."];
  if (state.init && !state.init.checkpoint) return { refuse: { type: "initIncomplete" } };
  if (Object.keys(fields).length) return { refuse: { type: "refused", fields } };
  const config = from ? configOver(from.config, built, form, state.values) : built;
  if (state.freeze.length) config.freeze = state.freeze;
  else delete config.freeze;
  return {
    body: {
      graph: graphId,
      revision: state.revision,
      dataset: Number(state.datasetId),
      config,
      ...(onRunsData(state, from) ? recipeOf(from) : {}),
      ...(state.init ? { init: state.init } : {}),
      ...priorityBody(state.priority),
    },
  };
}

/**
 * A start the server refused, as the dialog shows it: the start-from problems with the start-from
 * choice, priority and freeze next to theirs, config fields next to each field, the rest at the end.
 */
export function failedStart(e: unknown, form: ConfigForm): TrainAction {
  if (!(e instanceof ApiError)) return { type: "failed", errors: { ...NO_ERRORS, general: [(e as Error).message] }, initErrors: [] };
  const { init, rest } = splitInitErrors(e.fields);
  const priority = takePriorityErrors(rest);
  const freeze = takeFreezeErrors(rest);
  const mapped = mapServerErrors(rest, form.fields.map((f) => f.path));
  if (freeze.length) mapped.fields.freeze = freeze;
  if (priority.length) mapped.fields.priority = priority;
  if (!init.length && !mapped.graph.length && !mapped.general.length && !Object.keys(mapped.fields).length) mapped.general.push(e.message);
  return { type: "failed", errors: mapped, initErrors: init };
}
