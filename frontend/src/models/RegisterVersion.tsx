// "Register as a model version" on a finished run's page: pick or name a model, optionally a kept
// checkpoint; the run's weights are copied into the registry as that model's next version.
import { useEffect, useState } from "react";
import { navigate } from "../router";
import { type RegisteredModel, modelsApi } from "./api";

export function RegisterVersion({ runId, team, checkpoints }: { runId: number; team: number; checkpoints: string[] }) {
  const [open, setOpen] = useState(false);
  const [models, setModels] = useState<RegisteredModel[]>([]);
  const [choice, setChoice] = useState<string>("");
  const [newName, setNewName] = useState("");
  const [checkpoint, setCheckpoint] = useState("");
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (!open) return;
    void modelsApi.list(team).then((found) => {
      setModels(found);
      setChoice(found.length ? String(found[0].id) : "new");
    });
  }, [open, team]);

  const register = async () => {
    try {
      const modelId = choice === "new" ? (await modelsApi.create(team, newName.trim())).id : Number(choice);
      await modelsApi.register(modelId, runId, checkpoint);
      navigate(`/models/${modelId}`);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  if (!open)
    return (
      <button type="button" data-testid="register-run" onClick={() => setOpen(true)}>
        Register as a model version
      </button>
    );
  return (
    <section className="panel" data-testid="register-panel" aria-label="Register as a model version">
      <label>
        Model{" "}
        <select value={choice} onChange={(e) => setChoice(e.target.value)} data-testid="register-model">
          {models.map((m) => (
            <option key={m.id} value={m.id}>
              {m.name}
            </option>
          ))}
          <option value="new">a new model…</option>
        </select>
      </label>{" "}
      {choice === "new" && (
        <label>
          Name <input value={newName} onChange={(e) => setNewName(e.target.value)} data-testid="register-new-name" />
        </label>
      )}{" "}
      <label>
        Weights{" "}
        <select value={checkpoint} onChange={(e) => setCheckpoint(e.target.value)}>
          <option value="">final (the run's export)</option>
          {checkpoints.map((c) => (
            <option key={c} value={c}>
              checkpoint {c}
            </option>
          ))}
        </select>
      </label>{" "}
      <button type="button" className="primary" data-testid="register-confirm" disabled={choice === "new" && !newName.trim()} onClick={() => void register()}>
        Register
      </button>{" "}
      <button type="button" onClick={() => setOpen(false)}>
        Cancel
      </button>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
