// Ask why the trained model predicted what it did: pick a test row and a method, wait for the
// `explanation` event on the run's stream, then show the rendering, prediction, target and delta.
import { useCallback, useEffect, useId, useMemo, useState } from "react";
import { ApiError, api } from "../api/client";
import { runsApi } from "./api";
import { formatMetric } from "./format";
import type { DatasetSummary, Explanation, ExplanationEvent, ExplanationMethod, Run } from "./types";

const FALLBACK_POLL_MS = 5000;

export interface ExplainPanelProps {
  run: Run;
  canEdit: boolean;
  summary: DatasetSummary | null;
  /** Registers a listener for the stream's explanation events; returns the unsubscribe. */
  subscribe: (listener: (event: ExplanationEvent) => void) => () => void;
}

function className(summary: DatasetSummary | null, index: number | null | undefined): string {
  if (index === null || index === undefined) return "–";
  const name = summary?.classes?.[index];
  // Digits' classes are named "0".."9": "3 (3)" would say the same thing twice.
  return name !== undefined && name !== String(index) ? `${name} (${index})` : String(index);
}

export function ExplainPanel({ run, canEdit, summary, subscribe }: ExplainPanelProps) {
  const ids = useId();
  const [index, setIndex] = useState("0");
  // The engine's methods (GET /api/explanations/methods/): null while loading.
  const [methods, setMethods] = useState<ExplanationMethod[] | null>(null);
  const [method, setMethod] = useState("");
  const [target, setTarget] = useState("");
  const [layer, setLayer] = useState("");
  const [convNodes, setConvNodes] = useState<string[]>([]);
  const [history, setHistory] = useState<Explanation[]>([]);
  const [shown, setShown] = useState<Explanation | null>(null);
  const [busy, setBusy] = useState(false);
  const [errors, setErrors] = useState<Record<string, string>>({});

  const testRows = (summary?.rows?.test as number | undefined) ?? null;
  const isClassification = summary?.task === "classification";
  const chosen = methods?.find((m) => m.name === method) ?? null;

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
      setShown((s) => s ?? list.find((e) => e.status === "succeeded") ?? null);
    }, () => undefined);
    // Grad-CAM needs a convolution: offer the graph's conv nodes.
    api.revision(run.graph, run.revision).then(
      (rev) => setConvNodes((rev.spec.nodes ?? []).filter((n) => /^Conv/i.test(n.op)).map((n) => n.id)),
      () => undefined,
    );
  }, [run.id, run.graph, run.revision]);

  const refresh = useCallback(async (id: number) => {
    const e = await runsApi.explanation(id);
    setHistory((h) => (h.some((x) => x.id === id) ? h.map((x) => (x.id === id ? e : x)) : [e, ...h]));
    setShown((s) => (s?.id === id ? e : s));
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

  // A belt to the stream's braces: look now and then while one is pending.
  const pending = shown && (shown.status === "queued" || shown.status === "running") ? shown.id : null;
  useEffect(() => {
    if (pending === null) return;
    const timer = window.setInterval(() => void refresh(pending).catch(() => undefined), FALLBACK_POLL_MS);
    return () => window.clearInterval(timer);
  }, [pending, refresh]);

  async function request() {
    const problems: Record<string, string> = {};
    const n = Number(index);
    if (!Number.isInteger(n) || n < 0) problems.index = "A row number of the test split (0 or more).";
    else if (testRows !== null && n >= testRows) problems.index = `The test split has ${testRows} rows (0–${testRows - 1}).`;
    setErrors(problems);
    if (Object.keys(problems).length) return;
    setBusy(true);
    try {
      const body = {
        index: n,
        method,
        target: target === "" ? null : Number(target),
        layer: chosen?.needs_layer && layer ? layer : null,
      };
      const created = await runsApi.explain(run.id, body);
      setHistory((h) => [created, ...h]);
      setShown(created);
    } catch (e) {
      if (e instanceof ApiError && e.fields) {
        const mapped: Record<string, string> = {};
        for (const [k, v] of Object.entries(e.fields)) mapped[k in { index: 1, method: 1, target: 1, layer: 1 } ? k : "form"] = (Array.isArray(v) ? v : [v]).join(" ");
        setErrors(Object.keys(mapped).length ? mapped : { form: e.message });
      } else setErrors({ form: (e as Error).message });
    } finally {
      setBusy(false);
    }
  }

  const result = shown?.result ?? null;
  const trained = run.status === "succeeded";
  const fieldsOff = !canEdit || !trained || busy || chosen === null;

  const targetChoices = useMemo(() => (isClassification ? (summary?.classes ?? []) : []), [isClassification, summary]);

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
          {errors.index && <p className="field-error">{errors.index}</p>}
        </div>
        <div className="field">
          <label htmlFor={`${ids}-method`}>Method</label>
          <select id={`${ids}-method`} data-testid="explain-method" value={method} disabled={fieldsOff} onChange={(e) => setMethod(e.target.value)}>
            {methods === null && <option value="">Loading methods…</option>}
            {(methods ?? []).map((m) => (
              <option key={m.name} value={m.name} disabled={m.needs_layer && convNodes.length === 0}>
                {m.label}
                {m.needs_layer && convNodes.length === 0 ? " (needs a convolution)" : ""}
              </option>
            ))}
          </select>
          {chosen && <p className="help">{chosen.help}</p>}
          {errors.method && <p className="field-error">{errors.method}</p>}
        </div>
        {chosen?.needs_layer && (
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

      {shown && (
        <div className="explanation" data-testid="explanation" data-status={shown.status} aria-live="polite">
          <h3>
            {methods?.find((m) => m.name === shown.method)?.label ?? shown.method} · test row {shown.sample.index ?? "input"}
          </h3>
          {(shown.status === "queued" || shown.status === "running") && <p className="muted">Computing…</p>}
          {shown.status === "failed" && <p className="error">{shown.error || "The explanation failed."}</p>}
          {shown.status === "succeeded" && shown.image && (
            <img
              src={shown.image}
              data-testid="explanation-image"
              alt={`Attributions by ${shown.method} for test row ${shown.sample.index ?? ""}`}
              className="explanation-image"
            />
          )}
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
      )}
      {history.length > 1 && (
        <details className="small">
          <summary>Earlier explanations ({history.length})</summary>
          <ul className="plain">
            {history.map((e) => (
              <li key={e.id}>
                <button type="button" className="link" onClick={() => setShown(e)}>
                  #{e.id} {e.method}, row {e.sample.index ?? "input"} — {e.status}
                </button>
              </li>
            ))}
          </ul>
        </details>
      )}
    </section>
  );
}
