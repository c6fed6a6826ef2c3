// Ask why the trained model predicted what it did: pick a test row (or the input typed or
// uploaded in the predict panel) and one or two methods, wait for the `explanation` events on the
// run's stream, then show the sample as the user has it (raw values or image, its true label,
// its row in the user's own file), and per method the rendering, prediction, probabilities,
// delta and, for tables, bars over the original columns (one-hot parts summed, detail on hover).
import { useEffect, useId, useMemo, useRef, useState } from "react";
import { ApiError, api } from "../api/client";
import { runsApi } from "./api";
import { ExplanationCard, SampleView, whereInFile } from "./ExplanationView";
import type { SampleRowsAnswer } from "./judgeTypes";
import type { UserInput } from "./PredictPanel";
import type { DatasetSummary, Explanation, ExplanationEvent, ExplanationMethod, Run } from "./types";
import { useExplanations } from "./useExplanations";
import { isImageData } from "./EvaluationPanel";
import { useTrainingBackground } from "./imageCanvas";
import { ImageGuide } from "./ImageGuide";

export interface ExplainPanelProps {
  run: Run;
  canEdit: boolean;
  summary: DatasetSummary | null;
  /** Registers a listener for the stream's explanation events; returns the unsubscribe. */
  subscribe: (listener: (event: ExplanationEvent) => void) => () => void;
  /** The input of the predict panel's answer (a new `nonce` per input); null while there is none. */
  input?: (UserInput & { nonce: number }) | null;
  /** Counts the presses of "Explain this input": each one explains `input` now. */
  explainNow?: number;
}

export function ExplainPanel({ run, canEdit, summary, subscribe, input = null, explainNow = 0 }: ExplainPanelProps) {
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
  const [rows, setRows] = useState<SampleRowsAnswer | null>(null);
  const [busy, setBusy] = useState(false);
  const [errors, setErrors] = useState<Record<string, string>>({});

  const testRows = (summary?.rows?.test as number | undefined) ?? null;
  const isClassification = summary?.task === "classification";
  const { history, shown, setShownIds, add } = useExplanations(run.id, subscribe);
  const chosen = methods?.find((m) => m.name === method) ?? null;
  const chosen2 = methods?.find((m) => m.name === method2) ?? null;
  const trained = run.status === "succeeded";
  const training = useTrainingBackground(run.id, isImageData(summary) && trained, testRows);

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

  // A new input in the predict panel replaces the old one here: what was shown of an earlier input
  // (its thumbnail, its heat map) goes to "Earlier explanations".
  const shownAreInputs = useRef(false);
  shownAreInputs.current = shown.length > 0 && shown.every((e) => e.sample.index === null || e.sample.index === undefined);
  const nonce = input?.nonce;
  useEffect(() => {
    if (nonce === undefined) setSource((s) => (s === "input" ? "index" : s));
    setShownIds((ids) => (ids.length && shownAreInputs.current ? [] : ids));
  }, [nonce, setShownIds]);

  // "Explain this input" in the predict panel: explain it now, with the methods chosen here.
  const requestRef = useRef<(given: UserInput) => Promise<void>>(async () => undefined);
  useEffect(() => {
    if (!explainNow || !input) return;
    setSource("input");
    void requestRef.current(input);
  }, [explainNow]); // each press once, with the input of that moment (not again for a new input)

  async function request(given?: UserInput) {
    const problems: Record<string, string> = {};
    const n = Number(index);
    const from = given ? "input" : source;
    const sent = given ?? input;
    if (from === "index") {
      if (!Number.isInteger(n) || n < 0) problems.index = "A row number of the test split (0 or more).";
      else if (testRows !== null && n >= testRows) problems.index = `The test split has ${testRows} rows (0–${testRows - 1}).`;
    } else if (!sent) problems.form = "Type a row or upload an image in the predict panel first.";
    if (method2 && method2 === method) problems.method2 = "Pick a different method to compare with.";
    setErrors(problems);
    if (Object.keys(problems).length) return;
    setBusy(true);
    try {
      const sample = from === "index" || !sent ? { index: n } : sent.kind === "row" ? { input: sent.row } : { image: sent.dataUrl };
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
      add(created);
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

  requestRef.current = request;

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
        {source === "input" && input?.kind === "image" && <ImageGuide summary={summary} training={training} upload={input} testid="explain-guide" />}
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
