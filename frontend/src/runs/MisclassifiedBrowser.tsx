// The misclassified test samples of an evaluation, most (or least) confident first: thumbnails for
// images, the raw values as uploaded (and the row in the user's file) for tables.
import { useEffect, useId, useMemo, useState } from "react";
import { runsApi, sampleUrl } from "./api";
import { sortMisclassified, type ConfidenceOrder } from "./curves";
import type { EvaluationAnswer, MisclassifiedSample, SampleAnswer } from "./judgeTypes";
import type { Run } from "./types";

const PAGE = 12;

/** 98.9%, or – when unknown. */
export function pct(p: number | null | undefined): string {
  return p === null || p === undefined ? "–" : `${(p * 100).toFixed(1)}%`;
}

function MisclassifiedRow({ runId, item }: { runId: number; item: MisclassifiedSample }) {
  const [values, setValues] = useState<SampleAnswer | null>(null);
  useEffect(() => {
    let live = true;
    runsApi.sample(runId, item.index).then(
      (v) => live && setValues(v),
      () => undefined,
    );
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
        {values
          ? Object.entries(values.values)
              .map(([k, v]) => `${k}=${v === null ? "(empty)" : String(v)}`)
              .join(", ")
          : "…"}
      </td>
    </tr>
  );
}

export function MisclassifiedBrowser({ run, evaluation, images }: { run: Run; evaluation: EvaluationAnswer; images: boolean }) {
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
              <th scope="col" title="The row in your file (the header is row 1)">
                file row
              </th>
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
