// A ready dataset up close: the first rows or sample images, and the summary's facts.
import { useEffect, useState } from "react";
import { formatShape } from "../format";
import { runsApi } from "../runs/api";
import type { Dataset, DatasetPreview } from "../runs/types";
import { ColumnsPanel } from "./ColumnsPanel";

function cell(v: unknown): string {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6)));
  if (v === null || v === undefined) return "";
  return String(v);
}

export function DatasetPreviewPanel({
  dataset,
  onClose,
  canEdit = false,
  onChanged,
}: {
  dataset: Dataset;
  onClose: () => void;
  canEdit?: boolean;
  onChanged?: () => void;
}) {
  const [preview, setPreview] = useState<DatasetPreview | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    runsApi.preview(dataset.id).then(
      (p) => live && setPreview(p),
      (e) => live && setError((e as Error).message),
    );
    return () => {
      live = false;
    };
  }, [dataset.id, dataset.updated_at]);

  const s = dataset.summary ?? {};
  const rows = s.rows ?? {};
  return (
    <section className="panel" data-testid="dataset-preview-panel" aria-label={`Preview of ${dataset.name}`}>
      <div className="panel-head">
        <h2>{dataset.name}</h2>
        <button type="button" onClick={onClose} aria-label="Close the preview">
          Close
        </button>
      </div>
      <p className="muted">
        {s.task ?? "no task"} · features {formatShape(s.feature_shape)} · {rows.total ?? "?"} rows
        {rows.train !== undefined && ` (train ${rows.train}, val ${rows.val}, test ${rows.test})`}
        {s.target_name && ` · target ${s.target_name}`}
      </p>
      {s.class_counts && (
        <p className="small" data-testid="class-counts">
          {Object.entries(s.class_counts)
            .map(([k, n]) => `${k}: ${n}`)
            .join(" · ")}
        </p>
      )}
      {dataset.kind === "csv" && dataset.status === "ready" && (
        <ColumnsPanel key={dataset.updated_at} dataset={dataset} canEdit={canEdit} onChanged={() => onChanged?.()} />
      )}
      {error && <p className="error">{error}</p>}
      {!preview && !error && <p className="muted">Loading…</p>}
      {preview?.kind === "table" && (
        <div className="scroll-x">
          <table className="table small" data-testid="preview-table">
            <thead>
              <tr>
                {preview.columns.map((c) => (
                  <th key={c}>{c}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {preview.rows.map((r, i) => (
                <tr key={i}>
                  {r.map((v, j) => (
                    <td key={j}>{cell(v)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {preview?.kind === "images" && (
        <ul className="thumbs" data-testid="preview-images">
          {preview.samples.map((sample, i) => (
            <li key={i}>
              <img src={`data:image/png;base64,${sample.png}`} alt={`Sample of class ${sample.label}`} width={64} height={64} />
              <span>{sample.label}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
