// How good is the model and where is it wrong: the engine's evaluation of the test split
// (GET /api/runs/<id>/evaluation/). Classification: per-class precision/recall/F1/support, the
// misclassified samples (thumbnails or raw rows) by confidence, the reliability curve, ROC and
// precision-recall for two classes. Regression: MAE/RMSE/R², predicted vs true, residuals.
import { useEffect, useId, useMemo, useState } from "react";
import { ApiError } from "../api/client";
import { runsApi, sampleUrl } from "./api";
import { CurveChart } from "./CurveChart";
import { histogramSeries, pairsSeries, precisionRecallSeries, reliabilityNote, reliabilitySeries, rocSeries, sortMisclassified, type ConfidenceOrder } from "./curves";
import { formatMetric } from "./format";
import type { EvaluationAnswer, MisclassifiedSample, SampleAnswer } from "./judgeTypes";
import type { DatasetSummary, Run } from "./types";

const PAGE = 12;

function pct(p: number | null | undefined): string {
  return p === null || p === undefined ? "–" : `${(p * 100).toFixed(1)}%`;
}

/** Image data (C,H,W or H,W) shows thumbnails; tables show their raw rows. */
export function isImageData(summary: DatasetSummary | null): boolean {
  const shape = summary?.feature_shape ?? [];
  return shape.length >= 2 && !(summary?.columns?.length);
}

function MisclassifiedRow({ runId, item }: { runId: number; item: MisclassifiedSample }) {
  const [values, setValues] = useState<SampleAnswer | null>(null);
  useEffect(() => {
    let live = true;
    runsApi.sample(runId, item.index).then((v) => live && setValues(v), () => undefined);
    return () => {
      live = false;
    };
  }, [runId, item.index]);
  return (
    <tr data-testid="misclassified-item" data-index={item.index}>
      <td>{item.index}</td>
      <td>{values?.file_row ?? "–"}</td>
      <td>{item.true}</td>
      <td>
        {item.predicted} ({pct(item.probability)})
      </td>
      <td className="raw-values small">
        {values ? Object.entries(values.values).map(([k, v]) => `${k}=${v === null ? "(empty)" : String(v)}`).join(", ") : "…"}
      </td>
    </tr>
  );
}

function MisclassifiedBrowser({ run, evaluation, images }: { run: Run; evaluation: EvaluationAnswer; images: boolean }) {
  const ids = useId();
  const [order, setOrder] = useState<ConfidenceOrder>("most");
  const [page, setPage] = useState(0);
  const list = useMemo(() => sortMisclassified(evaluation.misclassified ?? [], order), [evaluation, order]);
  const total = evaluation.misclassified_total ?? list.length;
  const pages = Math.max(1, Math.ceil(list.length / PAGE));
  const shown = list.slice(page * PAGE, page * PAGE + PAGE);
  if (!list.length) return <p className="muted">No test sample is misclassified.</p>;
  return (
    <div className="misclassified" data-testid="misclassified">
      <div className="row small">
        <span>
          {total} of {evaluation.rows} test samples misclassified{total > list.length ? ` (the ${list.length} most confident kept)` : ""}
        </span>
        <span className="spacer" />
        <label htmlFor={`${ids}-order`}>Sort</label>
        <select
          id={`${ids}-order`}
          data-testid="misclassified-sort"
          value={order}
          onChange={(e) => {
            setOrder(e.target.value as ConfidenceOrder);
            setPage(0);
          }}
        >
          <option value="most">most confident first</option>
          <option value="least">least confident first</option>
        </select>
        <button type="button" className="link" disabled={page === 0} onClick={() => setPage(page - 1)}>
          ‹ prev
        </button>
        <span>
          {page + 1}/{pages}
        </span>
        <button type="button" className="link" disabled={page + 1 >= pages} onClick={() => setPage(page + 1)}>
          next ›
        </button>
      </div>
      {images ? (
        <ul className="thumbs plain">
          {shown.map((m) => (
            <li key={m.index} data-testid="misclassified-item" data-index={m.index} data-probability={m.probability}>
              <img src={sampleUrl(run.id, m.index)} alt={`test sample ${m.index}`} className="thumb" width={56} height={56} />
              <span className="small">
                #{m.index}
                <br />
                true <b>{m.true}</b>
                <br />
                predicted <b>{m.predicted}</b> {pct(m.probability)}
              </span>
            </li>
          ))}
        </ul>
      ) : (
        <table className="table small">
          <thead>
            <tr>
              <th scope="col">test row</th>
              <th scope="col" title="The row in your file (the header is row 1)">file row</th>
              <th scope="col">true</th>
              <th scope="col">predicted</th>
              <th scope="col">values as uploaded</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((m) => (
              <MisclassifiedRow key={m.index} runId={run.id} item={m} />
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

export function EvaluationPanel({ run, summary, canEdit }: { run: Run; summary: DatasetSummary | null; canEdit: boolean }) {
  const ids = useId();
  const [evaluation, setEvaluation] = useState<EvaluationAnswer | null>(null);
  const [missing, setMissing] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const trained = run.status === "succeeded";

  useEffect(() => {
    if (!trained) return;
    let live = true;
    runsApi.evaluation(run.id).then(
      (e) => live && setEvaluation(e),
      (e) => {
        if (!live) return;
        if (e instanceof ApiError && e.status === 404) setMissing(true);
        else setError((e as Error).message);
      },
    );
    return () => {
      live = false;
    };
  }, [run.id, trained]);

  async function compute() {
    setBusy(true);
    setError(null);
    try {
      setEvaluation(await runsApi.evaluate(run.id));
      setMissing(false);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="panel evaluation" aria-labelledby={`${ids}-h`} data-testid="evaluation-panel">
      <h2 id={`${ids}-h`}>How good is it</h2>
      {!trained && <p className="muted">The evaluation on the test split appears once the run has succeeded.</p>}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {trained && missing && !evaluation && (
        <p className="muted">
          This run has no evaluation yet.{" "}
          {canEdit && (
            <button type="button" className="link" data-testid="evaluation-compute" disabled={busy} onClick={() => void compute()}>
              {busy ? "Computing…" : "Compute it now"}
            </button>
          )}
        </p>
      )}
      {trained && !evaluation && !missing && !error && <p className="muted">Loading…</p>}
      {evaluation && evaluation.task === "classification" && (
        <>
          <p data-testid="evaluation-accuracy">
            Accuracy on {evaluation.rows} test samples: <b>{pct(evaluation.accuracy)}</b>
            {evaluation.reliability?.expected_calibration_error !== null && evaluation.reliability?.expected_calibration_error !== undefined && (
              <span className="muted"> · expected calibration error {formatMetric(evaluation.reliability.expected_calibration_error)}</span>
            )}
          </p>
          <table className="table small" data-testid="per-class-metrics">
            <caption>Per class (test split)</caption>
            <thead>
              <tr>
                <th scope="col">class</th>
                <th scope="col">precision</th>
                <th scope="col">recall</th>
                <th scope="col">F1</th>
                <th scope="col">support</th>
              </tr>
            </thead>
            <tbody>
              {(evaluation.per_class ?? []).map((c) => (
                <tr key={c.class} data-class={c.class}>
                  <th scope="row">{c.class}</th>
                  <td>{formatMetric(c.precision)}</td>
                  <td>{formatMetric(c.recall)}</td>
                  <td>{formatMetric(c.f1)}</td>
                  <td>{c.support}</td>
                </tr>
              ))}
            </tbody>
            {evaluation.macro && (
              <tfoot>
                <tr>
                  <th scope="row">macro average</th>
                  <td>{formatMetric(evaluation.macro.precision)}</td>
                  <td>{formatMetric(evaluation.macro.recall)}</td>
                  <td>{formatMetric(evaluation.macro.f1)}</td>
                  <td>{evaluation.rows}</td>
                </tr>
              </tfoot>
            )}
          </table>
          <h3>Where it is wrong</h3>
          <MisclassifiedBrowser run={run} evaluation={evaluation} images={isImageData(summary)} />
          <div className="curves">
            <CurveChart
              name="reliability"
              title="Reliability"
              series={reliabilitySeries(evaluation.reliability)}
              xLabel="confidence"
              yLabel="accuracy"
              unitSquare
              explain={reliabilityNote(evaluation.reliability)}
            />
            {evaluation.roc && (
              <CurveChart name="roc" title="ROC" note={`AUC ${formatMetric(evaluation.roc.auc)}`} series={rocSeries(evaluation.roc)} xLabel="false-positive rate" yLabel="true-positive rate" unitSquare />
            )}
            {evaluation.precision_recall && (
              <CurveChart
                name="precision-recall"
                title="Precision-recall"
                note={`AP ${formatMetric(evaluation.precision_recall.average_precision)}`}
                series={precisionRecallSeries(evaluation.precision_recall)}
                xLabel="recall"
                yLabel="precision"
                unitSquare
              />
            )}
          </div>
        </>
      )}
      {evaluation && evaluation.task === "regression" && (
        <>
          <table className="table small" data-testid="regression-metrics">
            <tbody>
              <tr>
                <th scope="row">MAE</th>
                <td>{formatMetric(evaluation.mae)}</td>
              </tr>
              <tr>
                <th scope="row">RMSE</th>
                <td>{formatMetric(evaluation.rmse)}</td>
              </tr>
              <tr>
                <th scope="row">R²</th>
                <td>{formatMetric(evaluation.r2)}</td>
              </tr>
            </tbody>
          </table>
          <div className="curves">
            <CurveChart
              name="predicted-vs-true"
              title="Predicted vs true"
              note={evaluation.pairs_total && evaluation.pairs && evaluation.pairs_total > evaluation.pairs.index.length ? `${evaluation.pairs.index.length} of ${evaluation.pairs_total}` : undefined}
              series={pairsSeries(evaluation.pairs)}
              xLabel="true"
              yLabel="predicted"
            />
            <CurveChart name="residuals" title="Residuals" series={histogramSeries(evaluation.residuals)} xLabel="predicted − true" yLabel="test samples" />
          </div>
        </>
      )}
    </section>
  );
}
