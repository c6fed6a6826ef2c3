// Opened from a run, the graph's other revisions can be trained too (fine-tune a changed graph).
import type { Run } from "../types";

export function RevisionField({ id, from, revisions, revision, onPick }: { id: string; from: Run; revisions: number[]; revision: number; onPick: (n: number) => void }) {
  return (
    <div className="field">
      <label htmlFor={id}>Graph revision</label>
      <select id={id} data-testid="train-revision" value={revision} onChange={(e) => onPick(Number(e.target.value))}>
        {revisions.map((n) => (
          <option key={n} value={n}>
            {n}
            {n === from.revision ? ` (run #${from.id}'s)` : ""}
          </option>
        ))}
      </select>
    </div>
  );
}
