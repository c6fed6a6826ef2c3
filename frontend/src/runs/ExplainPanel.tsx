// Ask why the trained model predicted what it did: pick a test row (or the input typed or
// uploaded in the predict panel) and one or two methods, wait for the `explanation` events on the
// run's stream, then show the sample as the user has it (raw values or image, its true label,
// its row in the user's own file), and per method the rendering, prediction, probabilities,
// delta and, for tables, bars over the original columns (one-hot parts summed, detail on hover).
import { useCallback, useEffect, useId, useMemo, useState } from "react";
import { ApiError, api } from "../api/client";
import { runsApi, sampleUrl } from "./api";
import { attributionsByColumn, flatAttributions } from "./attributions";
import { isImageData } from "./EvaluationPanel";
import { formatMetric } from "./format";
import type { SampleAnswer, SampleRowsAnswer } from "./judgeTypes";
import type { UserInput } from "./PredictPanel";
import type { DatasetSummary, Explanation, ExplanationEvent, ExplanationMethod, Run } from "./types";

const FALLBACK_POLL_MS = 5000;

export interface ExplainPanelProps {
  run: Run;
  canEdit: boolean;
  summary: DatasetSummary | null;
  /** Registers a listener for the stream's explanation events; returns the unsubscribe. */
  subscribe: (listener: (event: ExplanationEvent) => void) => () => void;
  /** The last input typed or uploaded in the predict panel; a new `nonce` selects it. */
  input?: (UserInput & { nonce: number }) | null;
}

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
function SampleView({ run, summary, explanation, rows }: { run: Run; summary: DatasetSummary | null; explanation: Explanation; rows: SampleRowsAnswer | null }) {
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

function ExplanationCard({ shown, methods, summary }: { shown: Explanation; methods: ExplanationMethod[] | null; summary: DatasetSummary | null }) {
  const result = shown.result ?? null;
  const isClassification = summary?.task === "classification";
  const where = shown.sample.index !== null && shown.sample.index !== undefined ? `test row ${shown.sample.index}` : "your input";
  return (
    <div className="explanation" data-testid="explanation" data-status={shown.status} data-method={shown.method} aria-live="polite">
      <h3>
        {methods?.find((m) => m.name === shown.method)?.label ?? shown.method} · {where}
      </h3>
      {(shown.status === "queued" || shown.status === "running") && <p className="muted">Computing…</p>}
      {shown.status === "failed" && <p className="error">{shown.error || "The explanation failed."}</p>}
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

export function ExplainPanel({ run, canEdit, summary, subscribe, input = null }: ExplainPanelProps) {
  const ids = useId();
  const [source, setSource] = useState<"index" | "input">("index");
  const [index, setIndex] = useState("0");
  // The engine's methods (GET /api/explanations/methods/): null while loading.
  const [methods, setMethods] = useState<ExplanationMethod[] | null>(null);
  const [method, setMethod] = useState("");
  const [method2, setMethod2] = useState("");
  const [target, setTarget] = useState("");
  const [layer, setLayer] = useState("");
  const [convNodes, setConvNodes] = useState<string[]>([]);
  const [history, setHistory] = useState<Explanation[]>([]);
  const [shownIds, setShownIds] = useState<number[]>([]);
  const [rows, setRows] = useState<SampleRowsAnswer | null>(null);
  const [busy, setBusy] = useState(false);
  const [errors, setErrors] = useState<Record<string, string>>({});

  const testRows = (summary?.rows?.test as number | undefined) ?? null;
  const isClassification = summary?.task === "classification";
  const chosen = methods?.find((m) => m.name === method) ?? null;
  const chosen2 = methods?.find((m) => m.name === method2) ?? null;
  const trained = run.status === "succeeded";

  useEffect(() => {
    let live = true;
    runsApi.explanationMethods().then(
      (list) => {
        if (!live) return;
        setMethods(list);
        setMethod((m) => m || list[0]?.name || "");
      },
      (e) => live && setErrors({ form: `The explanation methods could not be loaded: ${(e as Error).message}` }),
    );
    return () => {
      live = false;
    };
  }, []);

  useEffect(() => {
    runsApi.explanations(run.id).then((list) => {
      setHistory(list);
      setShownIds((s) => (s.length ? s : list.filter((e) => e.status === "succeeded").slice(0, 1).map((e) => e.id)));
    }, () => undefined);
    // Grad-CAM needs a convolution: offer the graph's conv nodes.
    api.revision(run.graph, run.revision).then(
      (rev) => setConvNodes((rev.spec.nodes ?? []).filter((n) => /^Conv/i.test(n.op)).map((n) => n.id)),
      () => undefined,
    );
  }, [run.id, run.graph, run.revision]);

  // Where the split's samples are in the user's own file ("test row 7" = row 23 of the CSV).
  useEffect(() => {
    if (!trained) return;
    runsApi.sampleRows(run.id).then(setRows, () => undefined);
  }, [run.id, trained]);

  // A new input from the predict panel: explain that one next.
  const nonce = input?.nonce;
  useEffect(() => {
    if (nonce !== undefined) setSource("input");
  }, [nonce]);

  const refresh = useCallback(async (id: number) => {
    const e = await runsApi.explanation(id);
    setHistory((h) => (h.some((x) => x.id === id) ? h.map((x) => (x.id === id ? e : x)) : [e, ...h]));
    return e;
  }, []);

  // The stream says when an explanation is done; fetch its result then.
  useEffect(
    () =>
      subscribe((event) => {
        if (event.status === "succeeded" || event.status === "failed") void refresh(event.id).catch(() => undefined);
      }),
    [subscribe, refresh],
  );

  const shown = shownIds.map((id) => history.find((e) => e.id === id)).filter((e): e is Explanation => !!e);

  // A belt to the stream's braces: look now and then while one is pending.
  const pendingKey = shown
    .filter((e) => e.status === "queued" || e.status === "running")
    .map((e) => e.id)
    .join(",");
  useEffect(() => {
    if (!pendingKey) return;
    const timer = window.setInterval(() => {
      for (const id of pendingKey.split(",")) void refresh(Number(id)).catch(() => undefined);
    }, FALLBACK_POLL_MS);
    return () => window.clearInterval(timer);
  }, [pendingKey, refresh]);

  async function request() {
    const problems: Record<string, string> = {};
    const n = Number(index);
    if (source === "index") {
      if (!Number.isInteger(n) || n < 0) problems.index = "A row number of the test split (0 or more).";
      else if (testRows !== null && n >= testRows) problems.index = `The test split has ${testRows} rows (0–${testRows - 1}).`;
    } else if (!input) problems.form = "Type a row or upload an image in the predict panel first.";
    if (method2 && method2 === method) problems.method2 = "Pick a different method to compare with.";
    setErrors(problems);
    if (Object.keys(problems).length) return;
    setBusy(true);
    try {
      const sample =
        source === "index" ? { index: n } : input!.kind === "row" ? { input: input!.row } : { image: input!.dataUrl };
      const created: Explanation[] = [];
      for (const [m, info] of [[method, chosen], [method2, chosen2]] as const) {
        if (!m) continue;
        created.push(
          await runsApi.explain(run.id, {
            ...sample,
            method: m,
            target: target === "" ? null : Number(target),
            layer: info?.needs_layer && layer ? layer : null,
          }),
        );
      }
      setHistory((h) => [...created.slice().reverse(), ...h]);
      setShownIds(created.map((e) => e.id));
    } catch (e) {
      if (e instanceof ApiError && e.fields) {
        const mapped: Record<string, string> = {};
        for (const [k, v] of Object.entries(e.fields)) {
          const key = k in { index: 1, method: 1, target: 1, layer: 1 } ? k : "form";
          const text = (Array.isArray(v) ? v : [v]).join(" ");
          mapped[key] = key === "form" ? `${k.replace(/^input\./, "")}: ${text}` : text;
        }
        setErrors(Object.keys(mapped).length ? mapped : { form: e.message });
      } else setErrors({ form: (e as Error).message });
    } finally {
      setBusy(false);
    }
  }

  const fieldsOff = !canEdit || !trained || busy || chosen === null;
  const targetChoices = useMemo(() => (isClassification ? (summary?.classes ?? []) : []), [isClassification, summary]);
  const methodOptions = (
    <>
      {(methods ?? []).map((m) => (
        <option key={m.name} value={m.name} disabled={m.needs_layer && convNodes.length === 0}>
          {m.label}
          {m.needs_layer && convNodes.length === 0 ? " (needs a convolution)" : ""}
        </option>
      ))}
    </>
  );
  const whereNow = source === "index" && Number.isInteger(Number(index)) ? whereInFile(rows, Number(index)) : null;

  return (
    <section className="panel" aria-labelledby={`${ids}-h`} data-testid="explain-panel">
      <h2 id={`${ids}-h`}>Explain a prediction</h2>
      {!trained && <p className="muted">Explanations are available once the run has succeeded.</p>}
      {trained && !canEdit && <p className="muted">Viewers can look at explanations; editors can ask for new ones.</p>}
      <form
        className="explain-form"
        onSubmit={(e) => {
          e.preventDefault();
          void request();
        }}
      >
        <fieldset className="field" disabled={fieldsOff}>
          <legend>Sample</legend>
          <label>
            <input type="radio" name={`${ids}-source`} data-testid="explain-source-index" checked={source === "index"} onChange={() => setSource("index")} /> a test row
          </label>{" "}
          <label title={input ? undefined : "Type a row or upload an image in the predict panel"}>
            <input
              type="radio"
              name={`${ids}-source`}
              data-testid="explain-source-input"
              checked={source === "input"}
              disabled={!input}
              onChange={() => setSource("input")}
            />{" "}
            {input?.kind === "image" ? `your uploaded image (${input.name})` : "your input from the predict panel"}
          </label>
        </fieldset>
        {source === "index" && (
          <div className="field">
            <label htmlFor={`${ids}-index`}>Test row</label>
            <input
              id={`${ids}-index`}
              data-testid="explain-index"
              type="number"
              min={0}
              max={testRows !== null ? testRows - 1 : undefined}
              value={index}
              disabled={fieldsOff}
              aria-invalid={!!errors.index}
              onChange={(e) => setIndex(e.target.value)}
            />
            {whereNow && <p className="help" data-testid="explain-index-where">{whereNow}</p>}
            {errors.index && <p className="field-error">{errors.index}</p>}
          </div>
        )}
        <div className="field">
          <label htmlFor={`${ids}-method`}>Method</label>
          <select id={`${ids}-method`} data-testid="explain-method" value={method} disabled={fieldsOff} onChange={(e) => setMethod(e.target.value)}>
            {methods === null && <option value="">Loading methods…</option>}
            {methodOptions}
          </select>
          {chosen && <p className="help">{chosen.help}</p>}
          {errors.method && <p className="field-error">{errors.method}</p>}
        </div>
        <div className="field">
          <label htmlFor={`${ids}-method2`}>Side by side with</label>
          <select id={`${ids}-method2`} data-testid="explain-method2" value={method2} disabled={fieldsOff} onChange={(e) => setMethod2(e.target.value)}>
            <option value="">(no second method)</option>
            {methodOptions}
          </select>
          {errors.method2 && <p className="field-error">{errors.method2}</p>}
        </div>
        {(chosen?.needs_layer || chosen2?.needs_layer) && (
          <div className="field">
            <label htmlFor={`${ids}-layer`}>Convolution</label>
            <select id={`${ids}-layer`} data-testid="explain-layer" value={layer} disabled={fieldsOff} onChange={(e) => setLayer(e.target.value)}>
              <option value="">The last one</option>
              {convNodes.map((id) => (
                <option key={id} value={id}>
                  {id}
                </option>
              ))}
            </select>
            {errors.layer && <p className="field-error">{errors.layer}</p>}
          </div>
        )}
        <div className="field">
          <label htmlFor={`${ids}-target`}>Explain the score of</label>
          {targetChoices.length > 0 ? (
            <select id={`${ids}-target`} data-testid="explain-target" value={target} disabled={fieldsOff} onChange={(e) => setTarget(e.target.value)}>
              <option value="">The predicted class</option>
              {targetChoices.map((c, i) => (
                <option key={i} value={i}>
                  {c}
                </option>
              ))}
            </select>
          ) : (
            <input
              id={`${ids}-target`}
              data-testid="explain-target"
              type="number"
              min={0}
              placeholder={isClassification ? "predicted class" : "output 0"}
              value={target}
              disabled={fieldsOff}
              onChange={(e) => setTarget(e.target.value)}
            />
          )}
          {errors.target && <p className="field-error">{errors.target}</p>}
        </div>
        <button type="submit" className="primary" data-testid="explain-submit" disabled={fieldsOff}>
          {busy ? "Asking…" : "Explain"}
        </button>
        {errors.form && (
          <p className="error" role="alert">
            {errors.form}
          </p>
        )}
      </form>

      {shown.length > 0 && (
        <div className="explained">
          <SampleView run={run} summary={summary} explanation={shown[0]} rows={rows} />
          <div className={`explanations side-${shown.length}`}>
            {shown.map((e) => (
              <ExplanationCard key={e.id} shown={e} methods={methods} summary={summary} />
            ))}
          </div>
        </div>
      )}
      {history.length > 1 && (
        <details className="small">
          <summary>Earlier explanations ({history.length})</summary>
          <ul className="plain">
            {history.map((e) => (
              <li key={e.id}>
                <button type="button" className="link" onClick={() => setShownIds([e.id])}>
                  #{e.id} {e.method}, {e.sample.index !== null && e.sample.index !== undefined ? `row ${e.sample.index}` : "your input"} — {e.status}
                </button>
              </li>
            ))}
          </ul>
        </details>
      )}
    </section>
  );
}
