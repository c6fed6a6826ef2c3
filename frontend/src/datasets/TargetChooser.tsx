// A ready CSV uploaded without a target: pick the column to predict; the server checks the file again.
import { useState } from "react";
import { apiRequest, ApiError } from "../api/client";
import type { Dataset } from "../runs/types";

/** The dataset JSON with the server's trainability fields (GET /api/datasets/<id>/); older servers
 * say nothing about `trainable` and `needs`. */
export type TrainableDataset = Omit<Dataset, "trainable" | "needs"> & Partial<Pick<Dataset, "trainable" | "needs">>;

/** Whether the dataset is a ready table that still needs its target column chosen. */
export function needsTarget(d: TrainableDataset): boolean {
  if (d.status !== "ready" || d.kind !== "csv") return false;
  // Older servers say nothing about `needs`: a table without a task has no target yet.
  return d.needs === undefined ? !d.summary?.task : d.needs === "target";
}

/** The columns the user can pick as the target, from the structural summary. */
export function targetChoices(d: Pick<Dataset, "summary">): { name: string; label: string }[] {
  return (d.summary?.columns ?? []).map((c) => ({
    name: c.name,
    label: typeof c.distinct === "number" ? `${c.name} (${c.kind}, ${c.distinct} ${c.distinct === 1 ? "value" : "values"})` : `${c.name} (${c.kind})`,
  }));
}

/** PATCH /api/datasets/<id>/ with new CSV options (merged into the stored ones). */
export function updateDatasetOptions(id: number, options: Record<string, unknown>): Promise<Dataset> {
  return apiRequest<Dataset>("PATCH", `/api/datasets/${id}/`, { options });
}

export function TargetChooser({ dataset, onChosen }: { dataset: Dataset; onChosen: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const choices = targetChoices(dataset);
  return (
    <div className="target-chooser small" data-testid="dataset-target">
      <label>
        Choose the target column{" "}
        <select
          aria-label={`Target column of ${dataset.name}`}
          data-testid="dataset-target-select"
          value=""
          disabled={busy || choices.length === 0}
          onChange={async (e) => {
            const target = e.target.value;
            if (!target) return;
            setBusy(true);
            setError(null);
            try {
              await updateDatasetOptions(dataset.id, { target });
              onChosen();
            } catch (err) {
              // The engine's sentence names the row and column already.
              setError(err instanceof ApiError ? err.message : String(err));
            } finally {
              setBusy(false);
            }
          }}
        >
          <option value="">{busy ? "Checking…" : "Choose…"}</option>
          {choices.map((c) => (
            <option key={c.name} value={c.name}>
              {c.label}
            </option>
          ))}
        </select>
      </label>
      {error && (
        <div className="error" role="alert" data-testid="dataset-target-error">
          {error}
        </div>
      )}
    </div>
  );
}
