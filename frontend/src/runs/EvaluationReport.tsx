// One evaluation on the test split, as figures: classification (accuracy, per-class precision,
// recall, F1, support, the misclassified samples, reliability, ROC and precision-recall for two
// classes) or regression (MAE, RMSE, R², predicted vs true, residuals). `about` names the weights.
import { CurveChart } from "./CurveChart";
import { histogramSeries, pairsSeries, precisionRecallSeries, reliabilityNote, reliabilitySeries, rocSeries } from "./curves";
import { formatMetric } from "./format";
import type { EvaluationAnswer } from "./judgeTypes";
import { MisclassifiedBrowser, pct } from "./MisclassifiedBrowser";
import type { Run } from "./types";

export function EvaluationReport({ run, evaluation, images, about }: { run: Run; evaluation: EvaluationAnswer; images: boolean; about: string }) {
  return (
    <>
      {evaluation.task === "classification" && (
        <>
          <p data-testid="evaluation-accuracy">
            Accuracy of {about} on {evaluation.rows} test samples: <b>{pct(evaluation.accuracy)}</b>
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
          <MisclassifiedBrowser run={run} evaluation={evaluation} images={images} />
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
              <CurveChart
                name="roc"
                title="ROC"
                note={`AUC ${formatMetric(evaluation.roc.auc)}`}
                series={rocSeries(evaluation.roc)}
                xLabel="false-positive rate"
                yLabel="true-positive rate"
                unitSquare
              />
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
      {evaluation.task === "regression" && (
        <>
          <p data-testid="evaluation-about">
            On {evaluation.rows} test samples, {about}:
          </p>
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
    </>
  );
}
