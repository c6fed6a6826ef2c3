// The data to train on: the team's ready datasets with a target, what the picked one holds, and
// whether the run's own split and transforms come along.
import { formatShape } from "../../format";
import { navigate } from "../../router";
import type { Dataset, Run } from "../types";
import type { FitProblem } from "./fit";

export interface DatasetFieldProps {
  id: string;
  /** Null while loading. */
  datasets: Dataset[] | null;
  datasetId: string;
  picked: Dataset | undefined;
  /** The run the dialog was opened from: its split is reused on its own data. */
  from: Run | null;
  sameData: boolean;
  /** A run without a dataset (imported weights): the user must choose one. */
  mustPick: boolean;
  errors: string[] | undefined;
  /** How the graph does not fit the picked dataset, each with its fix (empty: it fits). */
  fit: FitProblem[];
  onPick: (datasetId: string) => void;
}

export function DatasetField({ id, datasets, datasetId, picked, from, sameData, mustPick, errors, fit, onPick }: DatasetFieldProps) {
  return (
    <div className="field">
      <label htmlFor={id}>Dataset</label>
      {datasets === null ? (
        <p className="muted">Loading datasets…</p>
      ) : datasets.length === 0 ? (
        <p className="muted" data-testid="train-no-datasets">
          No ready dataset with a target yet.{" "}
          <a
            href={`${import.meta.env.BASE_URL}datasets`}
            onClick={(e) => {
              e.preventDefault();
              navigate("/datasets");
            }}
          >
            Add one
          </a>
          .
        </p>
      ) : (
        <select
          id={id}
          data-testid="train-dataset"
          value={datasetId}
          aria-invalid={!!errors}
          className={errors ? "invalid" : undefined}
          onChange={(e) => onPick(e.target.value)}
        >
          {(mustPick || !datasetId) && (
            <option value="" disabled>
              Choose a dataset
            </option>
          )}
          {datasets.map((d) => (
            <option key={d.id} value={d.id}>
              {d.name} ({d.kind})
            </option>
          ))}
        </select>
      )}
      {picked && (
        <p className="help">
          {picked.summary.task} · features {formatShape(picked.summary.feature_shape)}
          {picked.summary.num_classes ? ` · ${picked.summary.num_classes} classes` : ""} · {picked.summary.rows?.total ?? "?"} rows
          {sameData ? ` · the split of run #${from?.id}` : ""}
        </p>
      )}
      {picked && fit.length > 0 && (
        <div className="fit-problems" data-testid="train-fit-problems" role="alert">
          <strong>The graph does not fit this dataset yet:</strong>
          <ul>
            {fit.map((p) => (
              <li key={p.message} data-testid={`train-fit-${p.part}`}>
                {p.message}
              </li>
            ))}
          </ul>
          <span className="small">Change it in the editor and save, then train that revision.</span>
        </div>
      )}
      {mustPick && !picked && (
        <p className="help" data-testid="train-pick-dataset">
          Run #{from?.id} holds weights trained elsewhere, without a dataset: choose the one to train on.
        </p>
      )}
      {errors?.map((m) => (
        <p key={m} className="field-error" data-testid="error-dataset">
          {m}
        </p>
      ))}
    </div>
  );
}
