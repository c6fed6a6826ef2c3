// A dataset's versions: number, short digest, size, who and when, how many runs train on each;
// upload a new version; pick two and see what changed (rows, columns, statistics, class balance).
import { useCallback, useEffect, useState } from "react";
import { ApiError } from "../api/client";
import { formatBytes } from "../format";
import type { Dataset } from "../runs/types";
import { navigate } from "../router";
import { StatusBadge } from "./StatusBadge";
import { UploadForm } from "./UploadForm";
import { balanceRows, diffHeadline, statisticLines, versionLabel, versionsApi, type DatasetVersion, type VersionDiff } from "./versions";

/** The lineage page of a dataset version (under /app): which runs and models used it. */
export function lineagePath(dataset: number, version: number): string {
  return `/datasets/${dataset}/versions/${version}/lineage`;
}

function messageOf(e: unknown): string {
  return e instanceof ApiError || e instanceof Error ? e.message : String(e);
}

export function DiffView({ diff }: { diff: VersionDiff }) {
  const stats = statisticLines(diff);
  const balance = balanceRows(diff);
  const columns = diff.columns;
  const examples = diff.examples;
  return (
    <div className="version-diff" data-testid="version-diff">
      <p>
        <strong>
          v{diff.from.number} → v{diff.to.number}:
        </strong>{" "}
        <span data-testid="version-diff-headline">{diffHeadline(diff)}</span>
        {diff.rows && (
          <span className="muted">
            {" "}
            ({diff.rows.before} → {diff.rows.after} rows)
          </span>
        )}
      </p>
      {columns && (columns.added.length > 0 || columns.removed.length > 0 || columns.retyped.length > 0) && (
        <ul data-testid="version-diff-columns">
          {columns.added.length > 0 && <li>Columns added: {columns.added.join(", ")}</li>}
          {columns.removed.length > 0 && <li>Columns removed: {columns.removed.join(", ")}</li>}
          {columns.retyped.map((c) => (
            <li key={c.column}>
              {c.column}: {c.before} → {c.after}
            </li>
          ))}
        </ul>
      )}
      {stats.length > 0 && (
        <>
          <h4>Statistics that moved</h4>
          <ul data-testid="version-diff-stats">
            {stats.map((line) => (
              <li key={line}>{line}</li>
            ))}
          </ul>
        </>
      )}
      {balance.length > 0 && (
        <table className="table" data-testid="version-diff-balance">
          <caption>Class balance{diff.class_balance?.column ? ` (${diff.class_balance.column})` : ""}</caption>
          <thead>
            <tr>
              <th>Class</th>
              <th>v{diff.from.number}</th>
              <th>v{diff.to.number}</th>
            </tr>
          </thead>
          <tbody>
            {balance.map((b) => (
              <tr key={b.name}>
                <td>{b.name}</td>
                <td>{b.before}</td>
                <td>{b.after}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {examples && (["removed", "added", "changed"] as const).map((kind) =>
        examples[kind].length > 0 ? (
          <details key={kind} data-testid={`version-diff-${kind}`}>
            <summary>
              {kind} (first {examples[kind].length})
            </summary>
            <pre className="small">{examples[kind].map((e) => JSON.stringify(e)).join("\n")}</pre>
          </details>
        ) : null,
      )}
    </div>
  );
}

export function DatasetVersionsPanel({ dataset, canEdit, onChanged }: { dataset: Dataset; canEdit: boolean; onChanged: () => void }) {
  const [versions, setVersions] = useState<DatasetVersion[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [from, setFrom] = useState<number | null>(null);
  const [to, setTo] = useState<number | null>(null);
  const [key, setKey] = useState("");
  const [diff, setDiff] = useState<VersionDiff | null>(null);

  const load = useCallback(async () => {
    try {
      const found = await versionsApi.list(dataset.id);
      setVersions(found);
      const ready = found.filter((v) => v.status === "ready");
      if (ready.length >= 2) {
        setFrom((f) => f ?? ready[ready.length - 2].number);
        setTo((t) => t ?? ready[ready.length - 1].number);
      }
    } catch (e) {
      setError(messageOf(e));
    }
  }, [dataset.id]);

  useEffect(() => {
    void load();
  }, [load]);

  async function remove(v: DatasetVersion) {
    if (!window.confirm(`Delete version ${v.number} of "${dataset.name}"?`)) return;
    setError(null);
    try {
      await versionsApi.remove(dataset.id, v.number);
      await load();
      onChanged();
    } catch (e) {
      setError(messageOf(e));
    }
  }

  async function compare() {
    if (from === null || to === null) return;
    setError(null);
    setBusy("Comparing…");
    try {
      setDiff(await versionsApi.diff(dataset.id, from, to, key.trim() || undefined));
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(null);
    }
  }

  const ready = (versions ?? []).filter((v) => v.status === "ready");
  return (
    <section className="panel" aria-label={`Versions of ${dataset.name}`} data-testid="dataset-versions">
      <h2>Versions of {dataset.name}</h2>
      {versions === null && !error && <p className="muted">Loading…</p>}
      {versions && (
        <table className="table" data-testid="version-list">
          <thead>
            <tr>
              <th>Version</th>
              <th>Status</th>
              <th>Digest</th>
              <th>Size</th>
              <th>Rows</th>
              <th>Runs</th>
              <th>By</th>
              <th>When</th>
              <th aria-label="Actions" />
            </tr>
          </thead>
          <tbody>
            {versions.map((v) => (
              <tr key={v.number} data-testid={`version-row-${v.number}`}>
                <td>v{v.number}</td>
                <td>
                  <StatusBadge status={v.status} />
                  {v.error && <div className="error small">{v.error.message}</div>}
                </td>
                <td>
                  <code title={v.digest}>{v.digest.slice(0, 12) || "–"}</code>
                </td>
                <td>{v.size ? formatBytes(v.size) : "–"}</td>
                <td>{(v.summary as { rows?: { total?: number } } | null)?.rows?.total ?? "–"}</td>
                <td>{v.runs}</td>
                <td>{v.created_by?.username ?? "–"}</td>
                <td>{new Date(v.created_at).toLocaleString()}</td>
                <td className="actions">
                  {v.status === "ready" && (
                    <a
                      href={`${import.meta.env.BASE_URL}${lineagePath(dataset.id, v.number).slice(1)}`}
                      data-testid={`version-lineage-${v.number}`}
                      title="Which runs and models used this data"
                      onClick={(e) => {
                        e.preventDefault();
                        navigate(lineagePath(dataset.id, v.number));
                      }}
                    >
                      Lineage
                    </a>
                  )}
                  {canEdit && dataset.kind !== "builtin" && (
                    <button type="button" className="danger" aria-label={`Delete version ${v.number}`} onClick={() => void remove(v)}>
                      Delete
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {canEdit && dataset.kind !== "builtin" && (
        <UploadForm
          of={dataset}
          onDone={() => {
            setFrom(null);
            setTo(null);
            void load();
            onChanged();
          }}
        />
      )}
      {ready.length >= 2 && (
        <form
          className="row"
          aria-label="Compare two versions"
          onSubmit={(e) => {
            e.preventDefault();
            void compare();
          }}
        >
          <select aria-label="From version" data-testid="diff-from" value={from ?? ""} onChange={(e) => setFrom(Number(e.target.value))}>
            {ready.map((v) => (
              <option key={v.number} value={v.number}>
                {versionLabel(v)}
              </option>
            ))}
          </select>
          →
          <select aria-label="To version" data-testid="diff-to" value={to ?? ""} onChange={(e) => setTo(Number(e.target.value))}>
            {ready.map((v) => (
              <option key={v.number} value={v.number}>
                {versionLabel(v)}
              </option>
            ))}
          </select>
          {dataset.kind === "csv" && (
            <input aria-label="Row key column" placeholder="row key column (optional)" value={key} onChange={(e) => setKey(e.target.value)} />
          )}
          <button type="submit" data-testid="diff-compare" disabled={busy !== null || from === null || to === null}>
            Compare
          </button>
        </form>
      )}
      {busy && (
        <p className="muted" role="status">
          {busy}
        </p>
      )}
      {error && (
        <p className="error" role="alert" data-testid="version-error">
          {error}
        </p>
      )}
      {diff && <DiffView diff={diff} />}
    </section>
  );
}
