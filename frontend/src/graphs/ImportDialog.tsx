// "Import a model": the spec file `python -m engine import` wrote and, optionally, its weights,
// chosen in either order; a warning when the team already has a graph of that name. One request
// makes the graph and the run holding the weights, or nothing (a refused file is named beside
// its field). Both cases land on the new graph's canvas.
import { useReducer, useState } from "react";
import { ApiError } from "../api/client";
import type { GraphSummary } from "../api/types";
import { navigate } from "../router";
import { importBlocked, importReducer, initialImport } from "./importDialogState";
import { importGraph, sameName, sendingLine } from "./importSpec";

export function ImportDialog({ team, graphs, onClose }: { team: number; graphs: GraphSummary[]; onClose: () => void }) {
  const [state, dispatch] = useReducer(importReducer<File>, undefined, () => initialImport<File>());
  const [sending, setSending] = useState<string | null>(null);
  const twin = sameName(graphs, state.name);
  const blocked = importBlocked(state);

  async function submit() {
    if (!state.spec || blocked) return;
    setSending(state.weights ? sendingLine(state.weights.name, { loaded: 0, total: null }) : "Importing…");
    try {
      const answer = await importGraph(team, state.name.trim(), state.spec.spec, state.weights, (p) => state.weights && setSending(sendingLine(state.weights.name, p)));
      navigate(`/graphs/${answer.graph}${answer.run ? `?weights_run=${answer.run.id}` : ""}`);
    } catch (e) {
      dispatch({ type: "refused", message: (e as Error).message, fields: e instanceof ApiError ? e.fields : null });
      setSending(null);
    }
  }

  const { errors } = state;
  return (
    <div className="stale-backdrop">
      <form
        className="stale-dialog import-dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="import-title"
        data-testid="import-dialog"
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <h2 id="import-title">Import a model</h2>
        <p className="muted small">
          The files <code>python -m engine import model.py:Net --input-shape … --out spec.json --weights-out weights.safetensors</code> wrote. Choose them in any order; the weights are optional.
        </p>
        <div className="field">
          <label htmlFor="import-spec-file">Spec file (.json)</label>
          <input
            id="import-spec-file"
            type="file"
            accept=".json,application/json"
            data-testid="import-spec"
            aria-invalid={!!errors.spec}
            aria-describedby={errors.spec ? "import-spec-error" : undefined}
            onChange={(e) => {
              const file = e.target.files?.[0];
              if (file) void file.text().then((text) => dispatch({ type: "spec", fileName: file.name, text }));
            }}
          />
          {state.spec && (
            <p className="help" data-testid="import-spec-chosen">
              {state.spec.fileName}: {state.spec.spec.nodes?.length ?? 0} nodes
            </p>
          )}
          {errors.spec && (
            <p className="field-error" role="alert" id="import-spec-error" data-testid="import-spec-error">
              {errors.spec}
            </p>
          )}
        </div>
        <div className="field">
          <label htmlFor="import-weights-file">Weights (.safetensors, optional)</label>
          <input
            id="import-weights-file"
            type="file"
            accept=".safetensors"
            data-testid="import-weights"
            aria-invalid={!!errors.weights}
            aria-describedby={errors.weights ? "import-weights-error" : undefined}
            onChange={(e) => dispatch({ type: "weights", file: e.target.files?.[0] ?? null })}
          />
          {state.weights && !errors.weights && (
            <p className="help" data-testid="import-weights-chosen">
              {state.weights.name}: kept as checkpoint “imported” of revision 1, to fine-tune from
            </p>
          )}
          {errors.weights && (
            <div className="field-error" role="alert" id="import-weights-error" data-testid="import-weights-error">
              {errors.weights}
              {errors.weightsDetail && (
                <ul className="small">
                  {errors.weightsDetail.slice(0, 8).map((line) => (
                    <li key={line}>{line}</li>
                  ))}
                  {errors.weightsDetail.length > 8 && <li>… and {errors.weightsDetail.length - 8} more</li>}
                </ul>
              )}
            </div>
          )}
        </div>
        <div className="field">
          <label htmlFor="import-name">Graph name</label>
          <input id="import-name" data-testid="import-name" value={state.name} placeholder="from the spec file's name" onChange={(e) => dispatch({ type: "name", name: e.target.value })} />
          {twin && (
            <p className="warn small" role="status" data-testid="import-duplicate">
              Your team already has a graph called “{twin.name}”: importing makes a second one. Change the name, or add weights to the existing graph from its Revisions panel.
            </p>
          )}
          {errors.name && (
            <p className="field-error" role="alert">
              {errors.name}
            </p>
          )}
        </div>
        {errors.form && (
          <p className="error" role="alert">
            {errors.form}
          </p>
        )}
        {sending && (
          <p className="muted" role="status" data-testid="import-sending">
            {sending}
          </p>
        )}
        <div className="row">
          <span className="muted small">{blocked}</span>
          <span className="spacer" />
          <button type="button" onClick={onClose} disabled={!!sending}>
            Cancel
          </button>
          <button type="submit" className="primary" data-testid="import-submit" disabled={!!blocked || !!sending}>
            {state.weights ? "Import graph and weights" : "Import graph"}
          </button>
        </div>
      </form>
    </div>
  );
}
