// The team's registered models (/app/models): name, latest version, aliases; "New model" for editors.
import { useCallback, useEffect, useState } from "react";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { navigate } from "../router";
import { type RegisteredModel, modelsApi } from "./api";

export default function ModelsPage() {
  const { team, canEdit } = useSession();
  const [models, setModels] = useState<RegisteredModel[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState("");

  const load = useCallback(async () => {
    if (!team) return;
    try {
      setModels(await modelsApi.list(team.id));
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [team]);

  useEffect(() => {
    setModels(null);
    void load();
  }, [load]);

  const create = async () => {
    if (!team || !name.trim()) return;
    try {
      const made = await modelsApi.create(team.id, name.trim());
      navigate(`/models/${made.id}`);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  return (
    <div className="page">
      <TopBar />
      <main className="wide-page" data-testid="models-page">
        <div className="panel-head">
          <h1>Models{team ? ` of ${team.name}` : ""}</h1>
          {canEdit && (
            <form
              className="inline-form"
              onSubmit={(e) => {
                e.preventDefault();
                void create();
              }}
            >
              <label>
                <span className="sr-only">New model's name</span>
                <input value={name} placeholder="new model's name" aria-label="New model's name" onChange={(e) => setName(e.target.value)} />
              </label>
              <button type="submit" className="primary" data-testid="new-model" disabled={!name.trim()}>
                New model
              </button>
            </form>
          )}
        </div>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {models && models.length === 0 && (
          <p className="muted" data-testid="no-models">
            No models yet. A model names the weights your team uses: register a finished run as its version, then point
            "production" at the version you run.
          </p>
        )}
        {models && models.length > 0 && (
          <table className="table" data-testid="model-list">
            <thead>
              <tr>
                <th>Model</th>
                <th>Latest version</th>
                <th>Aliases</th>
                <th>Updated</th>
              </tr>
            </thead>
            <tbody>
              {models.map((m) => (
                <tr key={m.id}>
                  <td>
                    <a
                      href={`${import.meta.env.BASE_URL}models/${m.id}`}
                      onClick={(e) => {
                        e.preventDefault();
                        navigate(`/models/${m.id}`);
                      }}
                    >
                      {m.name}
                    </a>
                  </td>
                  <td>{m.latest_version ? `v${m.latest_version}` : "–"}</td>
                  <td className="small">
                    {Object.entries(m.aliases)
                      .map(([alias, version]) => `${alias} → v${version}`)
                      .join(", ") || "–"}
                  </td>
                  <td className="small muted">{new Date(m.updated_at).toLocaleString()}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </main>
    </div>
  );
}
