// One explanation as the explain panel shows it: the sample as the user has it (raw values or
// image, its true label, its row in the user's own file), and per method the rendering,
// prediction, probabilities, delta and, for tables, bars over the original columns.
import { useEffect, useMemo, useState } from "react";
import { JobProgress } from "../jobs/JobProgress";
import { fromExplanation } from "../jobs/jobState";
import { sampleUrl, runsApi } from "./api";
import { attributionsByColumn, flatAttributions } from "./attributions";
import { isImageData } from "./EvaluationPanel";
import { formatMetric } from "./format";
import type { SampleAnswer, SampleRowsAnswer } from "./judgeTypes";
import type { DatasetSummary, Explanation, ExplanationMethod, Run } from "./types";

function className(summary: DatasetSummary | null, index: number | null | undefined): string {
  if (index === null || index === undefined) return "–";
  const name = summary?.classes?.[index];
  // Digits' classes are named "0".."9": "3 (3)" would say the same thing twice.
  return name !== undefined && name !== String(index) ? `${name} (${index})` : String(index);
}

/** Where test row `index` is in the user's own data, in words. */
export function whereInFile(rows: SampleRowsAnswer | null, index: number): string | null {
  if (!rows || index < 0 || index >= rows.count) return null;
  if (rows.file_rows) return `row ${rows.file_rows[index]} of your file (the header is row 1)`;
  if (rows.entries) return `${rows.entries[index]} in your archive`;
  return `sample ${rows.rows[index]} of the dataset (counting from 0)`;
}

function inputOf(e: Explanation): unknown {
  return (e.sample as { input?: unknown }).input;
}

/** The sample an explanation is about, as the user has it, with its true label. */
export function SampleView({ run, summary, explanation, rows }: { run: Run; summary: DatasetSummary | null; explanation: Explanation; rows: SampleRowsAnswer | null }) {
  const index = explanation.sample.index ?? null;
  const given = inputOf(explanation);
  const [values, setValues] = useState<SampleAnswer | null>(null);
  const [truth, setTruth] = useState<string | null>(null);
  const images = isImageData(summary);
  useEffect(() => {
    setValues(null);
    setTruth(null);
    if (index === null) return;
    let live = true;
    if (!images) runsApi.sample(run.id, index).then((v) => live && setValues(v), () => undefined);
    runsApi.predict(run.id, { index }).then(
      (answer) => {
        if (!live) return;
        const t = answer.true;
        setTruth(Array.isArray(t) ? t.map(formatMetric).join(", ") : t && typeof t === "object" ? String((t as { class?: unknown }).class ?? "–") : "–");
      },
      () => live && setTruth("–"),
    );
    return () => {
      live = false;
    };
  }, [run.id, index, images]);

  const where = index !== null ? whereInFile(rows, index) : null;
  const row = index === null && given && typeof given === "object" && !Array.isArray(given) ? (given as Record<string, unknown>) : values?.values ?? null;
  return (
    <div className="sample-view" data-testid="explain-sample">
      {index !== null && images && <img src={sampleUrl(run.id, index)} alt={`test sample ${index}`} className="thumb big" data-testid="explain-sample-image" />}
      {index === null && typeof given === "string" && <img src={given} alt="the uploaded image" className="thumb big" data-testid="explain-sample-image" />}
      <dl className="facts">
        <dt>Sample</dt>
        <dd>
          {index !== null ? `test row ${index}` : typeof given === "string" ? "your uploaded image" : "your input"}
          {where && <span className="muted small" data-testid="explain-file-row"> · {where}</span>}
        </dd>
        <dt>True label</dt>
        <dd data-testid="explain-true">{index === null ? "unknown" : truth ?? "…"}</dd>
      </dl>
      {row && (
        <table className="table small raw-values" data-testid="explain-sample-values">
          <tbody>
            {Object.entries(row).map(([k, v]) => (
              <tr key={k}>
                <th scope="row">{k}</th>
                <td>{v === null || v === undefined || v === "" ? <span className="muted">(empty)</span> : String(v)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function AttributionBars({ explanation, summary }: { explanation: Explanation; summary: DatasetSummary | null }) {
  const result = explanation.result as (Explanation["result"] & { attributions?: unknown }) | null;
  const names = result?.feature_names;
  const images = isImageData(summary);
  const bars = useMemo(() => {
    // Bars are for tables: an image's pixels read better as the heat map.
    if (!names?.length || images) return [];
    const values = flatAttributions(result?.attributions);
    if (values.length !== names.length) return [];
    return attributionsByColumn(names, values, (summary?.columns ?? []).map((c) => c.name));
  }, [names, result, summary, images]);
  if (!bars.length) return null;
  const max = Math.max(1e-12, ...bars.map((b) => Math.abs(b.total)));
  return (
    <ul className="attribution-bars plain" data-testid="attribution-bars" aria-label="Attribution per column">
      {bars.map((b) => {
        const detail = b.parts.length > 1 || b.parts[0]?.feature !== b.column ? b.parts.map((p) => `${p.feature}: ${formatMetric(p.value)}`).join("\n") : undefined;
        return (
          <li key={b.column} data-column={b.column} title={detail ?? `${b.column}: ${formatMetric(b.total)}`}>
            <span className="attr-name">{b.column}</span>
            <span className="attr-track">
              <span className={`attr-bar ${b.total < 0 ? "neg" : "pos"}`} style={{ width: `${(Math.abs(b.total) / max) * 50}%`, [b.total < 0 ? "right" : "left"]: "50%" }} />
            </span>
            <span className="attr-value">{formatMetric(b.total)}</span>
          </li>
        );
      })}
    </ul>
  );
}

export function ExplanationCard({ shown, methods, summary }: { shown: Explanation; methods: ExplanationMethod[] | null; summary: DatasetSummary | null }) {
  const result = shown.result ?? null;
  const isClassification = summary?.task === "classification";
  const where = shown.sample.index !== null && shown.sample.index !== undefined ? `test row ${shown.sample.index}` : "your input";
  return (
    <div className="explanation" data-testid="explanation" data-status={shown.status} data-method={shown.method} aria-live="polite">
      <h3>
        {methods?.find((m) => m.name === shown.method)?.label ?? shown.method} · {where}
      </h3>
      <JobProgress view={fromExplanation(shown)} quietWhenDone testid="explanation-progress" barLabel={`Computing ${shown.method}`} />
      {shown.status === "succeeded" && shown.image && (
        <img src={shown.image} data-testid="explanation-image" alt={`Attributions by ${shown.method} for ${where}`} className="explanation-image" />
      )}
      {shown.status === "succeeded" && <AttributionBars explanation={shown} summary={summary} />}
      {result && (
        <dl className="facts">
          <dt>Prediction</dt>
          <dd data-testid="explanation-prediction">{isClassification ? className(summary, result.prediction) : formatMetric(result.output?.[0])}</dd>
          <dt>Explained</dt>
          <dd data-testid="explanation-target">{isClassification ? className(summary, result.target) : `output ${result.target ?? 0}`}</dd>
          {result.probabilities && (
            <>
              <dt>Probabilities</dt>
              <dd>{result.probabilities.map((p, i) => `${summary?.classes?.[i] ?? i}: ${(p * 100).toFixed(1)}%`).join(" · ")}</dd>
            </>
          )}
          {result.delta !== undefined && result.delta !== null && (
            <>
              <dt title="How far the attributions' sum is from the score difference; near 0 is good">Convergence delta</dt>
              <dd data-testid="explanation-delta">{formatMetric(result.delta)}</dd>
            </>
          )}
        </dl>
      )}
    </div>
  );
}
