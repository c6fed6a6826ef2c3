// Saved revisions of the graph, newest first, each restorable onto the canvas (as an undoable change)
// comparable with another one ("Compare with…" opens the diff view), and able to take weights
// trained elsewhere ("Add weights…").
import { useEffect, useState } from "react";
import { api, resultsOf } from "../api/client";
import type { RevisionSummary } from "../api/types";
import { AddWeights } from "../graphs/AddWeights";
import { useCompare } from "./DiffPanel";

function author(r: RevisionSummary): string {
  const by = r.created_by;
  if (by && typeof by === "object") return by.username;
  return by === null || by === undefined ? "" : String(by);
}

export function RevisionsPanel({ graphId, refreshKey, current, onRestore, canEdit = false }: { graphId: number; refreshKey: number; current: number | null; onRestore: (n: number) => void; canEdit?: boolean }) {
  const [revisions, setRevisions] = useState<RevisionSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const compare = useCompare();
  const [comparing, setComparing] = useState<number | null>(null);
  useEffect(() => {
    let live = true;
    api
      .revisions(graphId)
      .then((page) => live && setRevisions([...resultsOf(page)].sort((a, b) => b.number - a.number)))
      .catch((e) => live && setError((e as Error).message));
    return () => {
      live = false;
    };
  }, [graphId, refreshKey]);
  return (
    <section className="revisions" data-testid="revisions-panel" aria-label="Revisions">
      <h2>Revisions</h2>
      {error && <p className="error">{error}</p>}
      {revisions?.length === 0 && <p className="muted">Nothing saved yet.</p>}
      <ol>
        {revisions?.map((r) => (
          <li key={r.number} data-testid={`revision-${r.number}`} className={r.number === current ? "current" : undefined}>
            <div>
              <strong>Revision {r.number}</strong>
              {r.number === current && <span className="muted"> (latest)</span>}
              {r.origin && <span className="muted"> ({r.origin}: a variant, never the latest)</span>}
              <div className="muted small">
                {new Date(r.created_at).toLocaleString()} {author(r) && `· ${author(r)}`}
              </div>
            </div>
            <div className="revision-actions">
              <button type="button" data-testid={`restore-revision-${r.number}`} aria-label={`Restore revision ${r.number}`} onClick={() => onRestore(r.number)}>
                Restore
              </button>
              {compare && revisions.length > 1 && comparing !== r.number && (
                <button
                  type="button"
                  data-testid={`compare-revision-${r.number}`}
                  aria-label={`Compare revision ${r.number} with another revision`}
                  onClick={() => setComparing(r.number)}
                >
                  Compare with…
                </button>
              )}
              {compare && comparing === r.number && (
                <select
                  autoFocus
                  data-testid={`compare-pick-${r.number}`}
                  aria-label={`Compare revision ${r.number} with`}
                  value=""
                  onBlur={() => setComparing(null)}
                  onChange={(e) => {
                    const other = Number(e.target.value);
                    setComparing(null);
                    if (other) compare(r.number, other);
                  }}
                >
                  <option value="">with…</option>
                  {revisions
                    .filter((o) => o.number !== r.number)
                    .map((o) => (
                      <option key={o.number} value={o.number}>
                        Revision {o.number}
                        {author(o) ? ` · ${author(o)}` : ""}
                      </option>
                    ))}
                </select>
              )}
            </div>
            {canEdit && <AddWeights graphId={graphId} revision={r.number} />}
          </li>
        ))}
      </ol>
    </section>
  );
}
