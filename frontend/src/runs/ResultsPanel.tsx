// "Results": the metrics training ended with, named as the final weights (and, when the downloads
// hold an earlier best checkpoint, which one), the confusion matrices, and the downloads.
import { useState } from "react";
import { ApiError, apiRequest } from "../api/client";
import { JobProgress } from "../jobs/JobProgress";
import { fromExports } from "../jobs/jobState";
import { exportUrl } from "./api";
import { checkpointWords, defaultCheckpoint, exportIsNotFinal, finalWords } from "./evaluationChoice";
import { formatMetric } from "./format";
import type { Checkpoint, DatasetSummary, Run, RunExports } from "./types";

function ConfusionMatrix({ name, matrix, classes }: { name: string; matrix: number[][]; classes?: string[] | null }) {
  const label = (i: number) => classes?.[i] ?? String(i);
  const max = Math.max(1, ...matrix.flat());
  return (
    <table className="table small confusion" data-testid={`confusion-${name}`} aria-label={`Confusion matrix (${name}): rows are true classes, columns predicted`}>
      <caption>{name} confusion (rows: true, columns: predicted)</caption>
      <thead>
        <tr>
          <th scope="col" aria-label="true class" />
          {matrix[0]?.map((_, j) => (
            <th key={j} scope="col">
              {label(j)}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {matrix.map((row, i) => (
          <tr key={i}>
            <th scope="row">{label(i)}</th>
            {row.map((n, j) => (
              <td key={j} className={i === j ? "diag" : undefined} style={{ background: `rgba(47,111,221,${(0.6 * n) / max})` }}>
                {n}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Downloads({ run, onExports }: { run: Run; onExports: (exports: RunExports) => void }) {
  const [asking, setAsking] = useState<string | null>(null);
  if (run.status !== "succeeded") return <p className="muted">Downloads are available once the run has succeeded.</p>;
  const exports = run.exports;
  const exportJob = fromExports(exports);
  const files = [
    { format: "safetensors", label: "Weights (.safetensors)" },
    { format: "python", label: "Model source (model.py)" },
    { format: "zip", label: "Everything (.zip)" },
    { format: "config", label: "Training config (.json)" },
  ] as const;

  // Nothing is making the ONNX file (an older run): asking for it queues the export once; the
  // stream's `export` event says when it is there.
  async function makeOnnx() {
    setAsking("asking…");
    try {
      await apiRequest<unknown>("GET", exportUrl(run.id, "onnx"));
      onExports({ ...exports, onnx: true });
      setAsking(null);
    } catch (e) {
      const answer = e instanceof ApiError ? (e.body.exports as RunExports | undefined) : undefined;
      if (answer) {
        onExports(answer);
        setAsking(null);
      } else setAsking((e as Error).message);
    }
  }

  return (
    <ul className="downloads plain" data-testid="downloads" data-onnx={String(exports.onnx)}>
      {files.map((f) => (
        <li key={f.format}>
          {exports[f.format] ? (
            <a href={exportUrl(run.id, f.format)} download data-testid={`download-${f.format}`}>
              {f.label}
            </a>
          ) : (
            <span className="muted">{f.label}: missing</span>
          )}
        </li>
      ))}
      <li>
        {exports.onnx === true ? (
          <a href={exportUrl(run.id, "onnx")} download data-testid="download-onnx">
            ONNX (.onnx)
          </a>
        ) : exports.onnx === false ? (
          <button type="button" className="link" data-testid="download-onnx-make" disabled={asking === "asking…"} onClick={() => void makeOnnx()}>
            Make the ONNX file{asking ? ` (${asking})` : ""}
          </button>
        ) : exportJob && (exports.onnx === "pending" || exportJob.phase === "failed") ? (
          <JobProgress view={exportJob} what="ONNX" testid="download-onnx-note" barLabel="Making the ONNX file" live />
        ) : (
          <span className="muted" data-testid="download-onnx-note">
            ONNX: {exports.note || "not available for this graph."}
          </span>
        )}
      </li>
    </ul>
  );
}

export function ResultsPanel({ run, summary, checkpoints, onExports }: { run: Run; summary: DatasetSummary | null; checkpoints: Checkpoint[]; onExports: (exports: RunExports) => void }) {
  const final = run.final_metrics as Record<string, unknown>;
  const scalarFinals = Object.entries(final).filter(([, v]) => typeof v === "number");
  const matrices = Object.entries(final).filter(([k, v]) => k.endsWith("confusion_matrix") && Array.isArray(v)) as [string, number[][]][];
  const held = defaultCheckpoint(checkpoints);
  return (
    <section className="panel" aria-label="Results">
      <h2>Results</h2>
      {scalarFinals.length > 0 && (
        <p className="small" data-testid="final-metrics-about">
          Metrics of {finalWords(run)}, as training ended.
          {held && exportIsNotFinal(run, checkpoints) && (
            <>
              {" "}
              The downloads and “How good is it” hold checkpoint <b>{checkpointWords(held)}</b> instead{held.kind === "best" ? ": the best epoch, not the last" : ""}.
            </>
          )}
        </p>
      )}
      {scalarFinals.length === 0 ? (
        <p className="muted">Final metrics appear when the run ends.</p>
      ) : (
        <table className="table small" data-testid="final-metrics">
          <tbody>
            {scalarFinals.map(([k, v]) => (
              <tr key={k}>
                <th scope="row">{k}</th>
                <td>{formatMetric(v)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {matrices.map(([k, m]) => (
        <ConfusionMatrix key={k} name={k.split("/")[0]} matrix={m} classes={summary?.classes} />
      ))}
      <h3>Downloads</h3>
      <Downloads run={run} onExports={onExports} />
    </section>
  );
}
