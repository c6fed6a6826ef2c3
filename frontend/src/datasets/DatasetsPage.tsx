// The team's datasets: add a built-in, upload a file (with progress), watch processing, preview, delete.
import { useCallback, useEffect, useState } from "react";
import { ApiError } from "../api/client";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { formatBytes } from "../format";
import { JobProgress } from "../jobs/JobProgress";
import { fromDataset } from "../jobs/jobState";
import { runsApi } from "../runs/api";
import type { BuiltinDataset, Dataset } from "../runs/types";
import { DatasetPreviewPanel } from "./DatasetPreviewPanel";
import { DatasetVersionsPanel } from "./DatasetVersionsPanel";
import { needsTarget, TargetChooser } from "./TargetChooser";
import { UploadForm } from "./UploadForm";

const POLL_MS = 2000;

/** Rows of a dataset as the list shows them. */
export function datasetRows(d: Dataset): string {
  const total = d.summary?.rows?.total;
  return typeof total === "number" ? String(total) : "–";
}

/** Classes of a dataset as the list shows them ("3", "regression", "–"). */
export function datasetClasses(d: Dataset): string {
  const s = d.summary ?? {};
  if (s.task === "regression") return "regression";
  if (typeof s.num_classes === "number") return String(s.num_classes);
  if (Array.isArray(s.classes)) return String(s.classes.length);
  return "–";
}

/** `builtins` is null while the list is still loading. */
function BuiltinForm({ team, builtins, onAdded }: { team: number; builtins: BuiltinDataset[] | null; onAdded: () => void }) {
  const [choice, setChoice] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const picked = builtins?.find((b) => b.name === choice);
  return (
    <form
      className="dataset-form"
      aria-label="Add a built-in dataset"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!choice) return;
        setBusy(true);
        setError(null);
        try {
          await runsApi.addBuiltin(team, choice);
          setChoice("");
          onAdded();
        } catch (err) {
          setError(err instanceof ApiError ? err.message : String(err));
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2>Add a built-in</h2>
      <div className="row">
        <select
          aria-label="Built-in dataset"
          data-testid="builtin-select"
          value={choice}
          disabled={builtins === null}
          aria-busy={builtins === null}
          onChange={(e) => setChoice(e.target.value)}
        >
          <option value="">{builtins === null ? "Loading…" : "Choose…"}</option>
          {(builtins ?? []).map((b) => (
            <option key={b.name} value={b.name}>
              {b.title} ({b.rows} rows, {b.task === "regression" ? "regression" : `${b.num_classes} classes`})
            </option>
          ))}
        </select>
        <button type="submit" className="primary" data-testid="builtin-add" disabled={!choice || busy}>
          {busy ? "Adding…" : "Add"}
        </button>
      </div>
      {builtins === null && (
        <p className="muted builtin-loading" role="status" data-testid="builtin-loading">
          <span className="spinner" aria-hidden="true" /> Loading the built-in datasets…
        </p>
      )}
      {picked && <p className="help">{picked.description}</p>}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

export function DatasetsPage() {
  const { team, canEdit } = useSession();
  const [datasets, setDatasets] = useState<Dataset[] | null>(null);
  const [builtins, setBuiltins] = useState<BuiltinDataset[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [previewId, setPreviewId] = useState<number | null>(null);
  const [versionsId, setVersionsId] = useState<number | null>(null);

  const load = useCallback(async () => {
    if (!team) return;
    try {
      setDatasets(await runsApi.datasets(team.id));
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [team]);

  useEffect(() => {
    setDatasets(null);
    setPreviewId(null);
    void load();
  }, [load]);

  useEffect(() => {
    runsApi.builtins().then(setBuiltins, (e) => {
      setBuiltins([]);
      setError((e as Error).message);
    });
  }, []);

  // Uploads processed by a worker turn ready (or failed) later: look again while any is processing.
  const processing = datasets?.some((d) => d.status === "processing") ?? false;
  useEffect(() => {
    if (!processing) return;
    const id = window.setInterval(() => void load(), POLL_MS);
    return () => window.clearInterval(id);
  }, [processing, load]);

  async function remove(d: Dataset) {
    if (!window.confirm(`Delete the dataset "${d.name}"?`)) return;
    try {
      await runsApi.deleteDataset(d.id);
      if (previewId === d.id) setPreviewId(null);
      await load();
    } catch (e) {
      setError(e instanceof ApiError ? e.message : String(e));
    }
  }

  return (
    <div className="page">
      <TopBar />
      <main className="wide-page" data-testid="datasets-page">
        <h1>Datasets{team ? ` of ${team.name}` : ""}</h1>
        {!team && <p>You are not in any team yet.</p>}
        {team && !canEdit && (
          <p className="muted" data-testid="viewer-note">
            You are a viewer in {team.name}: you can preview datasets, but not add, upload or delete them.
          </p>
        )}
        {team && canEdit && (
          <div className="dataset-forms">
            <BuiltinForm team={team.id} builtins={builtins} onAdded={() => void load()} />
            <UploadForm team={team.id} datasets={datasets} onDone={() => void load()} />
          </div>
        )}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {datasets === null && team && <p className="muted">Loading…</p>}
        {datasets && datasets.length === 0 && (
          <p className="muted" data-testid="no-datasets">
            No datasets yet.
          </p>
        )}
        {datasets && datasets.length > 0 && (
          <table className="table" data-testid="dataset-list">
            <thead>
              <tr>
                <th>Name</th>
                <th>Kind</th>
                <th>Status</th>
                <th>Rows</th>
                <th>Classes</th>
                <th>Size</th>
                <th>Version</th>
                <th aria-label="Actions" />
              </tr>
            </thead>
            <tbody>
              {datasets.map((d) => (
                <tr key={d.id} data-testid={`dataset-row-${d.id}`} data-name={d.name} data-status={d.status}>
                  <td>
                    {d.name}
                    {needsTarget(d) && (
                      <div className="warn small">No target column was chosen: this table cannot be trained on.</div>
                    )}
                    {needsTarget(d) && canEdit && <TargetChooser dataset={d} onChosen={() => void load()} />}
                  </td>
                  <td>{d.kind}</td>
                  <td>
                    <JobProgress
                      view={fromDataset(d)}
                      badge={d.status}
                      badgeTestid="dataset-status"
                      testid="dataset-progress"
                      errorTestid="dataset-error"
                      barLabel={`Reading ${d.name}`}
                    />
                  </td>
                  <td data-testid="dataset-rows">{datasetRows(d)}</td>
                  <td data-testid="dataset-classes">{datasetClasses(d)}</td>
                  <td>{d.size ? formatBytes(d.size) : "–"}</td>
                  <td data-testid="dataset-version">
                    {d.latest_version ? <code title={d.latest_version.digest}>v{d.latest_version.number}</code> : "–"}
                  </td>
                  <td className="actions">
                    <button
                      type="button"
                      data-testid="dataset-versions-toggle"
                      aria-label={`Versions of ${d.name}`}
                      aria-expanded={versionsId === d.id}
                      disabled={d.status !== "ready"}
                      onClick={() => setVersionsId(versionsId === d.id ? null : d.id)}
                    >
                      {versionsId === d.id ? "Hide versions" : "Versions"}
                    </button>
                    <button
                      type="button"
                      data-testid="dataset-preview"
                      aria-label={`Preview ${d.name}`}
                      aria-expanded={previewId === d.id}
                      disabled={d.status !== "ready"}
                      onClick={() => setPreviewId(previewId === d.id ? null : d.id)}
                    >
                      {previewId === d.id ? "Hide" : "Preview"}
                    </button>
                    <button
                      type="button"
                      className="danger"
                      data-testid="dataset-delete"
                      aria-label={`Delete ${d.name}`}
                      disabled={!canEdit}
                      title={canEdit ? undefined : "Viewers cannot delete datasets"}
                      onClick={() => void remove(d)}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {versionsId !== null && datasets?.some((d) => d.id === versionsId) && (
          <DatasetVersionsPanel
            key={versionsId}
            dataset={datasets.find((d) => d.id === versionsId)!}
            canEdit={canEdit}
            onChanged={() => void load()}
          />
        )}
        {previewId !== null && datasets?.some((d) => d.id === previewId) && (
          <DatasetPreviewPanel
            dataset={datasets.find((d) => d.id === previewId)!}
            onClose={() => setPreviewId(null)}
            canEdit={canEdit}
            onChanged={() => void load()}
          />
        )}
      </main>
    </div>
  );
}
