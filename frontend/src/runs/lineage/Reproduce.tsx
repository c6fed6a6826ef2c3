// The run page's "Reproduce" button: a new run with the same graph revision, data, config (seed)
// and initialisation (POST /api/runs/<id>/reproduce/). On a CUDA run it says which kernels may
// differ between repeats and offers deterministic mode.
import { useState } from "react";
import { apiRequest } from "../../api/client";
import { navigate } from "../../router";
import type { Run } from "../types";
import { CUDA_NONDETERMINISTIC, onCuda } from "./lineage";

export function ReproduceButton({ run }: { run: Run }) {
  const [open, setOpen] = useState(false);
  const cuda = onCuda(run);
  const already = run.config.deterministic === true;
  const [deterministic, setDeterministic] = useState(cuda && !already);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function reproduce() {
    setBusy(true);
    setError(null);
    try {
      const body = deterministic && !already ? { deterministic: true } : {};
      const created = await apiRequest<Run>("POST", `/api/runs/${run.id}/reproduce/`, body);
      navigate(`/runs/${created.id}`);
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  }

  if (!open)
    return (
      <button
        type="button"
        data-testid="run-reproduce"
        title="Queue a run with the same graph revision, data, config, seed and initialisation"
        onClick={() => setOpen(true)}
      >
        Reproduce
      </button>
    );
  return (
    <div className="panel reproduce-box" data-testid="reproduce-box">
      <p className="small">
        A new run with graph revision {run.revision}, {run.dataset_name ?? "its data"}, this config (seed{" "}
        {String(run.config.seed ?? 0)}){run.init && Object.keys(run.init).length ? " and the same starting checkpoint" : ""}.
        {cuda ? "" : " On the CPU it trains the very same weights."}
      </p>
      {cuda && (
        <div className="small" data-testid="reproduce-cuda-note">
          <p>
            {already
              ? "This run used deterministic mode: a repeat on the same GPU model and software gives the same weights."
              : "This run trained on a GPU without deterministic mode: a repeat may differ slightly, because these kernels are not deterministic:"}
          </p>
          {!already && (
            <ul>
              {CUDA_NONDETERMINISTIC.map((k) => (
                <li key={k}>{k}</li>
              ))}
            </ul>
          )}
          {!already && (
            <label>
              <input
                type="checkbox"
                data-testid="reproduce-deterministic"
                checked={deterministic}
                onChange={(e) => setDeterministic(e.target.checked)}
              />{" "}
              Deterministic mode (a little slower; an op without a deterministic kernel fails the run, naming it)
            </label>
          )}
        </div>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="row">
        <button type="button" className="primary" data-testid="reproduce-confirm" disabled={busy} onClick={() => void reproduce()}>
          {busy ? "Queueing…" : "Queue the reproduction"}
        </button>
        <button type="button" disabled={busy} onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
    </div>
  );
}
