// Which version of the picked dataset the run trains on: the newest by default, the source run's
// when it starts again on that run's data; the run keeps it for ever.
import { useEffect, useState } from "react";
import { versionLabel, versionsApi, type DatasetVersion } from "../../datasets/versions";

export interface VersionFieldProps {
  id: string;
  datasetId: string;
  /** The chosen version number; null: the newest at creation. */
  value: number | null;
  onChange: (version: number | null) => void;
  errors: string[] | undefined;
}

export function VersionField({ id, datasetId, value, onChange, errors }: VersionFieldProps) {
  const [versions, setVersions] = useState<DatasetVersion[] | null>(null);
  useEffect(() => {
    setVersions(null);
    if (!datasetId) return;
    let live = true;
    versionsApi.list(Number(datasetId)).then(
      (found) => live && setVersions(found.filter((v) => v.status === "ready")),
      () => live && setVersions([]),
    );
    return () => {
      live = false;
    };
  }, [datasetId]);
  if (!datasetId || versions === null || versions.length === 0) return null;
  const newest = versions[versions.length - 1];
  return (
    <div className="field">
      <label htmlFor={id}>Dataset version</label>
      <select
        id={id}
        data-testid="train-dataset-version"
        value={value ?? ""}
        aria-invalid={!!errors}
        onChange={(e) => onChange(e.target.value === "" ? null : Number(e.target.value))}
      >
        <option value="">newest ({versionLabel(newest)})</option>
        {[...versions].reverse().map((v) => (
          <option key={v.number} value={v.number}>
            {versionLabel(v)} · {(v.summary as { rows?: { total?: number } } | null)?.rows?.total ?? "?"} rows
          </option>
        ))}
      </select>
      {errors?.map((m) => (
        <p key={m} className="field-error" data-testid="error-dataset_version">
          {m}
        </p>
      ))}
    </div>
  );
}
