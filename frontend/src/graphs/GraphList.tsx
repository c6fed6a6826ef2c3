// The team's graphs: create (empty or from a template), import a model, rename, delete, open.
import { type FormEvent, useCallback, useEffect, useState } from "react";
import { ApiError, api, resultsOf } from "../api/client";
import type { GraphSummary } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { TEMPLATES } from "../editor/templates";
import { ImportDialog } from "./ImportDialog";
import { navigate } from "../router";

export function GraphList() {
  const { team, canEdit } = useSession();
  const [graphs, setGraphs] = useState<GraphSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [template, setTemplate] = useState("");
  const [renaming, setRenaming] = useState<{ id: number; name: string } | null>(null);
  const [importing, setImporting] = useState(false);

  const load = useCallback(async () => {
    if (!team) return;
    try {
      setGraphs(resultsOf(await api.graphs(team.id)));
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [team]);

  useEffect(() => {
    setGraphs(null);
    void load();
  }, [load]);

  async function create(e: FormEvent) {
    e.preventDefault();
    if (!team || !name.trim()) return;
    try {
      // An empty canvas is not a model yet: the first save makes revision 1.
      const spec = TEMPLATES.find((t) => t.key === template)?.spec;
      const graph = await api.createGraph(team.id, name.trim(), spec);
      navigate(`/graphs/${graph.id}`);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    }
  }

  async function rename(e: FormEvent) {
    e.preventDefault();
    if (!renaming) return;
    try {
      await api.renameGraph(renaming.id, renaming.name.trim());
      setRenaming(null);
      await load();
    } catch (err) {
      setError((err as Error).message);
    }
  }

  async function remove(graph: GraphSummary) {
    if (!window.confirm(`Delete "${graph.name}" and all its revisions?`)) return;
    try {
      await api.deleteGraph(graph.id);
      await load();
    } catch (err) {
      setError((err as Error).message);
    }
  }

  return (
    <div className="page">
      <TopBar />
      <main className="graph-list" data-testid="graph-list-page">
        <h1>Graphs{team ? ` of ${team.name}` : ""}</h1>
        {!team && <p>You are not in any team yet. Ask an admin to add you to one.</p>}
        {team && canEdit && (
          <form className="create-graph" onSubmit={create} aria-label="New graph">
            <input aria-label="New graph name" placeholder="New graph name" data-testid="new-graph-name" value={name} onChange={(e) => setName(e.target.value)} />
            <select aria-label="Start from" data-testid="new-graph-template" value={template} onChange={(e) => setTemplate(e.target.value)}>
              <option value="">Empty canvas</option>
              {TEMPLATES.map((t) => (
                <option key={t.key} value={t.key}>
                  {t.label}
                </option>
              ))}
            </select>
            <button type="submit" className="primary" data-testid="create-graph" disabled={!name.trim()}>
              Create
            </button>
            <button type="button" data-testid="import-open" title="A spec file (and its weights) written by `python -m engine import`" onClick={() => setImporting(true)}>
              Import a model…
            </button>
          </form>
        )}
        {team && !canEdit && (
          <p className="muted" data-testid="viewer-note">
            You are a viewer in {team.name}: you can open graphs, runs and datasets, but not change them or train.
          </p>
        )}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {graphs === null && team && <p className="muted">Loading…</p>}
        {graphs && graphs.length === 0 && <p className="muted" data-testid="no-graphs">No graphs yet.</p>}
        {graphs && graphs.length > 0 && (
          <table className="graphs" data-testid="graph-list">
            <thead>
              <tr>
                <th>Name</th>
                <th>Revisions</th>
                <th>Updated</th>
                <th aria-label="Actions" />
              </tr>
            </thead>
            <tbody>
              {graphs.map((g) => (
                <tr key={g.id} data-testid={`graph-row-${g.id}`}>
                  <td>
                    {renaming?.id === g.id ? (
                      <form onSubmit={rename} className="inline">
                        <input aria-label="Graph name" data-testid="rename-input" autoFocus value={renaming.name} onChange={(e) => setRenaming({ id: g.id, name: e.target.value })} />
                        <button type="submit" data-testid="rename-save">
                          Save
                        </button>
                        <button type="button" onClick={() => setRenaming(null)}>
                          Cancel
                        </button>
                      </form>
                    ) : (
                      <a
                        href={`${import.meta.env.BASE_URL}graphs/${g.id}`}
                        data-testid="open-graph"
                        onClick={(e) => {
                          e.preventDefault();
                          navigate(`/graphs/${g.id}`);
                        }}
                      >
                        {g.name}
                      </a>
                    )}
                  </td>
                  <td>{g.latest_revision ?? 0}</td>
                  <td>{g.updated_at ? new Date(g.updated_at).toLocaleString() : ""}</td>
                  <td className="actions">
                    {canEdit && (
                      <>
                        <button type="button" data-testid="rename-graph" aria-label={`Rename ${g.name}`} onClick={() => setRenaming({ id: g.id, name: g.name })}>
                          Rename
                        </button>
                        <button type="button" className="danger" data-testid="delete-graph" aria-label={`Delete ${g.name}`} onClick={() => remove(g)}>
                          Delete
                        </button>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </main>
      {importing && team && <ImportDialog team={team.id} graphs={graphs ?? []} onClose={() => setImporting(false)} />}
    </div>
  );
}
