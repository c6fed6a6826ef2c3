// "Promote to production": the recorded figures of the version against the current production
// version's (value, change, better/worse where the metric's direction is known) and a note kept
// in the history. Moves production at once, or files the request a second admin approves when the
// team asks for that; the request filed is then shown until someone decides it.
import { useState } from "react";
import { formatMetric } from "../runs/format";
import type { AliasAnswer, ModelVersion } from "./api";
import { formatDelta, metricDiff } from "./promote";

export interface PromoteDialogProps {
  version: ModelVersion;
  /** The version production names now (null: nothing in production yet). */
  production: ModelVersion | null;
  /** The team asks a second admin to approve production moves. */
  needsApproval: boolean;
  /** Moves the alias (PUT); answers the model or the approval request filed. */
  promote: (version: number, note: string) => Promise<AliasAnswer>;
  onDone: (answer: AliasAnswer) => void;
  onCancel: () => void;
}

export function PromoteDialog({ version, production, needsApproval, promote, onDone, onCancel }: PromoteDialogProps) {
  const [note, setNote] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const rows = metricDiff(version.metrics, production?.metrics ?? null);
  const submit = async () => {
    setBusy(true);
    try {
      onDone(await promote(version.number, note.trim()));
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="panel promote-dialog" role="dialog" aria-labelledby="promote-title" data-testid="promote-panel">
      <h2 id="promote-title">
        Promote v{version.number} to production{production ? ` (replacing v${production.number})` : ""}
      </h2>
      {rows.length === 0 ? (
        <p className="muted">This version recorded no validation or test figures to compare.</p>
      ) : (
        <table className="table small" data-testid="promote-diff">
          <thead>
            <tr>
              <th>Metric</th>
              <th>{production ? `v${production.number} (now)` : "now"}</th>
              <th>v{version.number}</th>
              <th>Change</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.key} data-testid={`diff-${r.key}`}>
                <td>{r.key}</td>
                <td>{r.before === null ? "–" : formatMetric(r.before)}</td>
                <td>{formatMetric(r.after)}</td>
                <td>{formatDelta(r.delta)}</td>
                <td className={r.verdict ? `verdict verdict-${r.verdict}` : "muted"}>
                  {r.verdict ?? (r.delta === null ? "" : "direction unknown")}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <label className="field">
        Note (kept in the history)
        <textarea
          data-testid="promote-note"
          value={note}
          maxLength={500}
          rows={2}
          onChange={(e) => setNote(e.target.value)}
          placeholder="Why this version"
        />
      </label>
      {needsApproval && (
        <p className="muted small" data-testid="promote-needs-approval">
          Your team asks a second admin to approve production moves: this files a request; production moves when
          another admin approves it.
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <button type="button" className="primary" data-testid="confirm-promote" disabled={busy} onClick={() => void submit()}>
        {needsApproval ? "Ask for approval" : "Promote"}
      </button>{" "}
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
    </section>
  );
}
