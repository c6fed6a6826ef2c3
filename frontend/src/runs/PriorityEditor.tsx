// A queued run's priority, changed in place (PATCH /api/runs/<id>/ {"priority"}): higher starts
// first among the team's own queued runs. Used on the run page and in the workers page's queue.
import { useEffect, useId, useState } from "react";
import { ApiError, apiRequest } from "../api/client";
import { priorityValue } from "../workers/workers";
import type { Run } from "./types";

export function PriorityEditor({ run, onSaved }: { run: Pick<Run, "id" | "priority">; onSaved: (run: Run) => void }) {
  const id = useId();
  const [text, setText] = useState(String(run.priority ?? 0));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => setText(String(run.priority ?? 0)), [run.priority]);
  const changed = text.trim() !== String(run.priority ?? 0);

  async function save() {
    setBusy(true);
    setError(null);
    try {
      onSaved(await apiRequest<Run>("PATCH", `/api/runs/${run.id}/`, { priority: priorityValue(text) }));
    } catch (e) {
      const field = e instanceof ApiError ? e.fields?.priority : undefined;
      setError(field ? (Array.isArray(field) ? field.join(" ") : String(field)) : (e as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form
      className="priority-editor row"
      noValidate
      data-testid={`priority-editor-${run.id}`}
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <label htmlFor={id} className="small">
        Priority
      </label>
      <input id={id} data-testid={`priority-${run.id}`} type="number" min={-10} max={10} step={1} value={text} size={3} onChange={(e) => setText(e.target.value)} />
      <button type="submit" disabled={!changed || busy} data-testid={`priority-save-${run.id}`} title="-10..10: higher starts first among your team's queued runs">
        {busy ? "Saving…" : "Set"}
      </button>
      {error && (
        <span className="field-error" role="alert" data-testid={`priority-error-${run.id}`}>
          {error}
        </span>
      )}
    </form>
  );
}
