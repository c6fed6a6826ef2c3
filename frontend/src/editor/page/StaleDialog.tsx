// A save refused because a teammate saved a newer revision: load theirs, see the changes, put mine
// on top of theirs (a three-way merge, when the edits touch different nodes/parameters), or save as
// a new revision anyway, with the list of their changes that this would undo.
import { useEffect, useState } from "react";
import { api } from "../../api/client";
import type { GraphSpec } from "../../api/types";
import { formatValue } from "../diff";
import { type MergeResult, type UndoneChange, mergeSpecs, theirChangesUndone } from "../merge";
import { type StaleBase, savedSentence } from "../staleSave";

export interface StaleDialogProps {
  graphId: number;
  stale: StaleBase;
  /** The revision the canvas was opened on (when the refusal does not say). */
  savedRevision: number | null;
  /** What the canvas holds. */
  mine: GraphSpec | null;
  onLoad: () => void;
  onDiff: (from: number, to: number) => void;
  onForce: () => void;
  /** Put the merged spec on the canvas, based on `theirs` (revision `latest`). */
  onMerge: (merged: GraphSpec, theirs: GraphSpec, latest: number) => void;
  onCancel: () => void;
}

interface Plan {
  theirs: GraphSpec;
  undone: UndoneChange[];
  merge: MergeResult;
}

/** Reads the base and their revision and works out what saving anyway undoes and what a merge gives. */
function useMergePlan(graphId: number, base: number | null, latest: number, mine: GraphSpec | null): Plan | null {
  const [plan, setPlan] = useState<Plan | null>(null);
  useEffect(() => {
    let live = true;
    if (base === null || !mine) return;
    Promise.all([api.revision(graphId, base), api.revision(graphId, latest)])
      .then(([b, t]) => {
        if (live) setPlan({ theirs: t.spec, undone: theirChangesUndone(b.spec, t.spec, mine), merge: mergeSpecs(b.spec, t.spec, mine) });
      })
      .catch(() => live && setPlan(null));
    return () => {
      live = false;
    };
  }, [graphId, base, latest, mine]);
  return plan;
}

function UndoneList({ undone, who }: { undone: UndoneChange[]; who: string }) {
  if (undone.length === 0) return <p className="muted small">Saving anyway undoes none of {who}'s changes.</p>;
  return (
    <div className="stale-undone" data-testid="stale-undone">
      <p className="small">
        <strong>Saving anyway undoes {undone.length === 1 ? "this change" : `these ${undone.length} changes`} of {who}'s:</strong>
      </p>
      <ul className="small">
        {undone.map((u) => (
          <li key={u.path}>
            <code>{u.path}</code>: {formatValue(u.theirs)} (theirs) goes back to {formatValue(u.mine)}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function StaleDialog({ graphId, stale, savedRevision, mine, onLoad, onDiff, onForce, onMerge, onCancel }: StaleDialogProps) {
  const base = stale.base ?? savedRevision;
  const latest = stale.latest.number;
  const plan = useMergePlan(graphId, base, latest, mine);
  const who = stale.latest.author || "the teammate";
  const conflicts = plan?.merge.conflicts ?? [];
  return (
    <div className="stale-backdrop">
      <div className="stale-dialog" role="dialog" aria-modal="true" aria-labelledby="stale-title" data-testid="stale-dialog">
        <h2 id="stale-title">A newer revision was saved</h2>
        <p data-testid="stale-message">
          {savedSentence(stale.latest)}, after the revision {base ?? "none"} you started from. Your changes are not saved yet.
        </p>
        <div className="stale-choices">
          {plan && (
            <button
              type="button"
              className="primary"
              data-testid="stale-merge"
              disabled={!plan.merge.spec}
              onClick={() => plan.merge.spec && onMerge(plan.merge.spec, plan.theirs, latest)}
            >
              Apply my changes on top of theirs
              <span className="small" data-testid="stale-merge-note">
                {plan.merge.spec
                  ? `keeps revision ${latest} and adds your edits; review, then save`
                  : `both changed ${conflicts.map((c) => c.path).join(", ")}: choose one side below`}
              </span>
            </button>
          )}
          <button type="button" data-testid="stale-load" onClick={onLoad}>
            Load revision {latest}
            <span className="muted small">discard mine, open theirs (Undo brings mine back)</span>
          </button>
          {base !== null && (
            <button type="button" data-testid="stale-diff" onClick={() => onDiff(base, latest)}>
              See the changes
              <span className="muted small">
                revision {base} → {latest}
              </span>
            </button>
          )}
          <button type="button" data-testid="stale-force" onClick={onForce}>
            Save as a new revision anyway
            <span className="muted small">revision {latest} stays in the history</span>
          </button>
        </div>
        {plan && <UndoneList undone={plan.undone} who={who} />}
        <div className="dialog-actions">
          <button type="button" data-testid="stale-cancel" onClick={onCancel}>
            Keep editing
          </button>
        </div>
      </div>
    </div>
  );
}
