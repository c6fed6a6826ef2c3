// One registered model (/app/models/<id>): its versions with their figures and source run, the
// aliases, "Promote to production" with the figures against the version it replaces, and the
// history of every alias move.
import { useCallback, useEffect, useState } from "react";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { navigate } from "../router";
import { formatMetric } from "../runs/format";
import { type ModelVersion, type RegisteredModelDetail, figuresAgainst, modelsApi, versionFigures } from "./api";
import VersionFormats from "./VersionFormats";

export default function ModelPage({ modelId }: { modelId: number }) {
  const { team, canEdit } = useSession();
  const [model, setModel] = useState<RegisteredModelDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [promoting, setPromoting] = useState<ModelVersion | null>(null);

  const load = useCallback(async () => {
    try {
      setModel(await modelsApi.get(modelId));
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [modelId]);
  useEffect(() => void load(), [load]);

  const move = async (alias: string, version: number) => {
    try {
      setModel(await modelsApi.setAlias(modelId, alias, version));
      setPromoting(null);
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  const isAdmin = team?.role === "admin";
  const production = model?.versions.find((v) => v.number === model.aliases.production) ?? null;
  return (
    <div className="page">
      <TopBar />
      <main className="wide-page" data-testid="model-page">
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {model && (
          <>
            <h1>
              {model.name}{" "}
              <span className="muted small">
                {Object.entries(model.aliases)
                  .map(([alias, v]) => `${alias} → v${v}`)
                  .join(", ")}
              </span>
            </h1>
            {model.versions.length === 0 && (
              <p className="muted" data-testid="no-versions">
                No versions yet: open a finished run and press "Register as a model version".
              </p>
            )}
            <table className="table" data-testid="version-list">
              <thead>
                <tr>
                  <th>Version</th>
                  <th>From</th>
                  <th>Figures</th>
                  <th>Aliases</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {model.versions.map((v) => (
                  <tr key={v.number} data-testid={`version-${v.number}`}>
                    <td>v{v.number}</td>
                    <td className="small">
                      {v.source.run ? (
                        <a
                          href={`${import.meta.env.BASE_URL}runs/${String(v.source.run)}`}
                          onClick={(e) => {
                            e.preventDefault();
                            navigate(`/runs/${String(v.source.run)}`);
                          }}
                        >
                          run {String(v.source.run)}
                        </a>
                      ) : (
                        "a deleted run"
                      )}
                      {v.source.checkpoint ? `, checkpoint ${String(v.source.checkpoint)}` : ", final weights"}
                    </td>
                    <td className="small">
                      {versionFigures(v.metrics)
                        .map(([k, value]) => `${k} ${formatMetric(value)}`)
                        .join(" · ")}
                    </td>
                    <td className="small">{v.aliases.join(", ")}</td>
                    <td>
                      {canEdit && !v.aliases.includes("staging") && (
                        <button type="button" onClick={() => void move("staging", v.number)}>
                          Make staging
                        </button>
                      )}{" "}
                      {!v.aliases.includes("production") && (
                        <button
                          type="button"
                          data-testid={`promote-${v.number}`}
                          disabled={!isAdmin}
                          title={isAdmin ? undefined : "Only a team admin moves production"}
                          onClick={() => setPromoting(v)}
                        >
                          Promote to production
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {promoting && (
              <section className="panel" data-testid="promote-panel" aria-label="Promote to production">
                <h2>
                  Promote v{promoting.number} to production{production ? ` (replacing v${production.number})` : ""}
                </h2>
                <table className="table small">
                  <thead>
                    <tr>
                      <th>Metric</th>
                      <th>{production ? `v${production.number} (now)` : "now"}</th>
                      <th>v{promoting.number}</th>
                    </tr>
                  </thead>
                  <tbody>
                    {figuresAgainst(promoting.metrics, production?.metrics ?? null).map(([key, before, after]) => (
                      <tr key={key}>
                        <td>{key}</td>
                        <td>{before === null ? "–" : formatMetric(before)}</td>
                        <td>{formatMetric(after)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
                <button type="button" className="primary" data-testid="confirm-promote" onClick={() => void move("production", promoting.number)}>
                  Promote
                </button>{" "}
                <button type="button" onClick={() => setPromoting(null)}>
                  Cancel
                </button>
              </section>
            )}
            {model.versions.length > 0 && <VersionFormats model={model} onChanged={() => void load()} />}
            <h2>History</h2>
            {model.history.length === 0 ? (
              <p className="muted">No alias has been set yet.</p>
            ) : (
              <ul className="history" data-testid="alias-history">
                {model.history.map((h, i) => (
                  <li key={i}>
                    <span className="muted small">{new Date(h.at).toLocaleString()}</span> {h.actor ?? "someone"}{" "}
                    {h.to_version === null
                      ? `dropped ${h.alias} (was v${h.from_version})`
                      : `moved ${h.alias} ${h.from_version ? `v${h.from_version} → ` : "to "}v${h.to_version}`}
                    {h.note ? `: ${h.note}` : ""}
                  </li>
                ))}
              </ul>
            )}
          </>
        )}
      </main>
    </div>
  );
}
