// A save refused because a teammate saved a newer revision: load theirs, see the changes, or save
// as a new revision anyway.
import { type StaleBase, savedSentence } from "../staleSave";

export interface StaleDialogProps {
  stale: StaleBase;
  /** The revision the canvas was opened on (when the refusal does not say). */
  savedRevision: number | null;
  onLoad: () => void;
  onDiff: (from: number, to: number) => void;
  onForce: () => void;
  onCancel: () => void;
}

export function StaleDialog({ stale, savedRevision, onLoad, onDiff, onForce, onCancel }: StaleDialogProps) {
  const base = stale.base ?? savedRevision;
  return (
    <div className="stale-backdrop">
      <div className="stale-dialog" role="dialog" aria-modal="true" aria-labelledby="stale-title" data-testid="stale-dialog">
        <h2 id="stale-title">A newer revision was saved</h2>
        <p data-testid="stale-message">
          {savedSentence(stale.latest)}, after the revision {base ?? "none"} you started from. Your changes are not saved yet.
        </p>
        <div className="stale-choices">
          <button type="button" data-testid="stale-load" onClick={onLoad}>
            Load revision {stale.latest.number}
            <span className="muted small">discard mine, open theirs (Undo brings mine back)</span>
          </button>
          {base !== null && (
            <button type="button" data-testid="stale-diff" onClick={() => onDiff(base, stale.latest.number)}>
              See the changes
              <span className="muted small">
                revision {base} → {stale.latest.number}
              </span>
            </button>
          )}
          <button type="button" data-testid="stale-force" onClick={onForce}>
            Save as a new revision anyway
            <span className="muted small">revision {stale.latest.number} stays in the history</span>
          </button>
        </div>
        <div className="dialog-actions">
          <button type="button" data-testid="stale-cancel" onClick={onCancel}>
            Keep editing
          </button>
        </div>
      </div>
    </div>
  );
}
