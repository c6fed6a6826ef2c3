// The team's graphs: create (empty or from a template), rename, delete, open.
import { type FormEvent, useCallback, useEffect, useState } from "react";
import { ApiError, api, resultsOf } from "../api/client";
import type { GraphSummary } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { TEMPLATES } from "../editor/templates";
import { type ImportedRun, importWeights, importedSpec, weightsProblem } from "./importSpec";
import { navigate } from "../router";

export function GraphList() {
  const { team, canEdit } = useSession();
  const [graphs, setGraphs] = useState<GraphSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [template, setTemplate] = useState("");
  const [renaming, setRenaming] = useState<{ id: number; name: string } | null>(null);
  // Optional weights for the next spec import (`--weights-out`): revision 1's first checkpoint.
  const [weights, setWeights] = useState<File | null>(null);
  const [imported, setImported] = useState<{ graph: GraphSummary; run: ImportedRun } | null>(null);
  const [sending, setSending] = useState<string | null>(null);

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

  // A spec file written by `python -m engine import model.py:Net ...` becomes a new graph; with
  // its weights chosen too, they become a run's checkpoint `imported` (linked once sent).
  async function importFile(file: File | undefined) {
    if (!team || !file) return;
    setImported(null);
    let graph: GraphSummary | null = null;
    try {
      const problem = weightsProblem(weights);
      if (problem) throw new Error(problem);
      const { name: graphName, spec } = importedSpec(file.name, await file.text(), name);
      graph = await api.createGraph(team.id, graphName, spec);
      if (!weights) {
        navigate(`/graphs/${graph.id}`);
        return;
      }
      setSending(`Sending ${weights.name}…`);
      const run = await importWeights(graph.id, graph.latest_revision ?? 1, weights, (p) =>
        setSending(`Sending ${weights.name}… ${p.total ? Math.round((100 * p.loaded) / p.total) : 0}%`),
      );
      setImported({ graph, run });
      setWeights(null);
      setError(null);
      await load();
    } catch (err) {
      const message = err instanceof ApiError ? err.message : (err as Error).message;
      // The graph stays when only its weights were refused: say so, so it is not imported twice.
      setError(graph ? `Graph "${graph.name}" was created, but its weights were not imported: ${message}` : message);
      if (graph) await load();
    } finally {
      setSending(null);
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
            <label className="button" title="A spec.json written by `python -m engine import model.py:Net --input-shape ...`">
              Import a spec file…
              <input
                type="file"
                accept=".json,application/json"
                data-testid="import-spec"
                hidden
                onChange={(e) => {
                  void importFile(e.target.files?.[0]);
                  e.target.value = "";
                }}
              />
            </label>
            <label className="button" title="Optional, before the spec file: the weights `python -m engine import ... --weights-out` wrote, kept as a first checkpoint to fine-tune from">
              {weights ? `Weights: ${weights.name}` : "Weights (.safetensors)…"}
              <input
                type="file"
                accept=".safetensors"
                data-testid="import-weights"
                hidden
                onChange={(e) => {
                  const chosen = e.target.files?.[0] ?? null;
                  setError(weightsProblem(chosen));
                  setWeights(weightsProblem(chosen) ? null : chosen);
                  e.target.value = "";
                }}
              />
            </label>
            {weights && (
              <button type="button" aria-label="Do not import weights" onClick={() => setWeights(null)}>
                ×
              </button>
            )}
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
        {sending && (
          <p className="muted" role="status">
            {sending}
          </p>
        )}
        {imported && (
          <p role="status" data-testid="imported-weights">
            Imported{" "}
            <a
              href={`${import.meta.env.BASE_URL}graphs/${imported.graph.id}`}
              onClick={(e) => {
                e.preventDefault();
                navigate(`/graphs/${imported.graph.id}`);
              }}
            >
              {imported.graph.name}
            </a>{" "}
            with its weights: run{" "}
            <a
              href={`${import.meta.env.BASE_URL}runs/${imported.run.id}`}
              data-testid="imported-run"
              onClick={(e) => {
                e.preventDefault();
                navigate(`/runs/${imported.run.id}`);
              }}
            >
              {imported.run.name}
            </a>{" "}
            holds them as checkpoint “imported”, to start a run from.
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
    </div>
  );
}
