// What the train dialog loads: the graph's revisions (opened from a run), the settings form (filled
// once, from the run it was opened with), and per revision the team's datasets and freezable nodes.
import { type Dispatch, useEffect } from "react";
import { api, resultsOf } from "../../api/client";
import { loadConfigForm } from "../configForm";
import { runsApi } from "../api";
import type { InitChoice } from "../initPlan";
import type { Run } from "../types";
import type { GraphShapes } from "./fit";
import type { TrainAction } from "./reducer";
import { defaultDataset, valuesForRun } from "./rules";

export function useTrainData(
  graphId: number,
  revision: number,
  from: Run | null,
  initialInit: InitChoice | null,
  mustPickDataset: boolean,
  dispatch: Dispatch<TrainAction>,
): void {
  useEffect(() => {
    if (!from) return;
    let live = true;
    api.revisions(graphId).then(
      (p) => live && dispatch({ type: "revisionsLoaded", revisions: resultsOf(p).map((r) => r.number).sort((a, b) => b - a) }),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [from, graphId, dispatch]);

  useEffect(() => {
    let live = true;
    loadConfigForm().then(
      (form) => live && dispatch({ type: "formLoaded", form, values: from ? valuesForRun(form, from, initialInit) : form.defaultValues() }),
      (e) => live && dispatch({ type: "formFailed", message: (e as Error).message }),
    );
    return () => {
      live = false;
    };
    // The dialog fills its form once, from the run it was opened with.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    let live = true;
    // The revision's input shape picks the first dataset offered (a missing revision picks none).
    const shapes = api.revision(graphId, revision).then(
      (r) => {
        const ids = (r.spec.nodes ?? []).map((n) => n.id);
        // Only nodes with weights can be frozen: the check's parameter counts say which.
        api.validate(r.spec).then(
          (report) =>
            live &&
            dispatch({
              type: "nodesLoaded",
              nodes: ids.filter((id) => (report.nodes[id]?.params ?? 0) > 0),
              graph: { inputs: r.spec.inputs.map((i) => ({ id: i.id, shape: [...i.shape] })), outputs: (report.outputs ?? {}) as GraphShapes["outputs"] },
            }),
          () => live && dispatch({ type: "nodesLoaded", nodes: ids }),
        );
        return r.spec.inputs.map((i) => [...i.shape]);
      },
      () => null,
    );
    api
      .graph(graphId)
      .then((g) => {
        if (live) dispatch({ type: "teamKnown", team: g.team });
        return Promise.all([runsApi.datasets(g.team), shapes]);
      })
      .then(
        ([list, inputShapes]) => {
          if (!live) return;
          const ready = list.filter((d) => d.status === "ready" && d.summary?.task);
          // A run without a dataset (imported weights): nothing is picked for the user.
          dispatch({ type: "datasetsLoaded", datasets: ready, first: mustPickDataset ? undefined : defaultDataset(ready, inputShapes) });
        },
        (e) => live && dispatch({ type: "loadFailed", message: (e as Error).message }),
      );
    return () => {
      live = false;
    };
  }, [graphId, revision, mustPickDataset, dispatch]);
}
