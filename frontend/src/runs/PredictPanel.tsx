// Will it work on my input: a form generated from the dataset's columns to type a row, or an
// image drop zone, sent to POST /api/runs/<id>/predict/; the answer (class, every class's
// probability, the preprocessed shape) is shown at once, a refused field's message beside it.
// Images: what the model expects, what the network saw of the upload, and a one-click invert.
import { useId, useMemo, useState } from "react";
import { ApiError } from "../api/client";
import { runsApi } from "./api";
import { isImageData } from "./EvaluationPanel";
import { formatMetric } from "./format";
import { invertedFile, useTrainingBackground } from "./imageCanvas";
import { ImageGuide } from "./ImageGuide";
import type { NetworkView, PredictAnswer } from "./judgeTypes";
import { fieldErrors, predictFields, rowOf, valuesOf } from "./predictForm";
import type { DatasetSummary, Run } from "./types";

/** What the user typed or uploaded, to be explained by the explain panel. */
export type UserInput =
  | { kind: "row"; row: Record<string, string | number | null> }
  | { kind: "image"; dataUrl: string; name: string; seen?: NetworkView | null };

function readAsDataUrl(file: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error("The file could not be read."));
    reader.readAsDataURL(file);
  });
}

export function PredictAnswerView({ answer }: { answer: PredictAnswer }) {
  const classification = typeof answer.prediction === "string";
  return (
    <div className="predict-answer" data-testid="predict-answer" aria-live="polite">
      <p>
        Prediction: <b data-testid="predict-class">{classification ? answer.prediction : (answer.prediction as number[]).map(formatMetric).join(", ")}</b>
        {answer.probability !== null && answer.probability !== undefined && <> ({(answer.probability * 100).toFixed(1)}%)</>}
      </p>
      {answer.probabilities && (
        <ul className="probabilities plain" data-testid="predict-probabilities">
          {answer.probabilities.map((p) => (
            <li key={p.class}>
              <span className="prob-name">{p.class}</span>
              <span className="prob-bar" style={{ width: `${Math.max(1, p.probability * 100)}%` }} />
              <span className="prob-value">{(p.probability * 100).toFixed(1)}%</span>
            </li>
          ))}
        </ul>
      )}
      <p className="muted small" data-testid="predict-shape">
        The network saw a tensor of shape [{answer.input_shape.join(", ")}].
      </p>
    </div>
  );
}

export function PredictPanel({
  run,
  summary,
  canEdit,
  onInput,
  onExplain,
}: {
  run: Run;
  summary: DatasetSummary | null;
  canEdit: boolean;
  /** The input the shown answer is about (null while a new one is on its way, or after a refusal). */
  onInput: (input: UserInput | null) => void;
  /** "Explain this input": the explain panel explains the last input handed over. */
  onExplain: () => void;
}) {
  const ids = useId();
  const fields = useMemo(() => predictFields(summary, run.recipe), [summary, run.recipe]);
  const images = isImageData(summary);
  const [values, setValues] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [answer, setAnswer] = useState<PredictAnswer | null>(null);
  const [input, setInput] = useState<UserInput | null>(null);
  const [busy, setBusy] = useState(false);
  const [dragging, setDragging] = useState(false);
  const trained = run.status === "succeeded";
  const off = !canEdit || !trained || busy;
  const training = useTrainingBackground(run.id, images && trained, (summary?.rows?.test as number | undefined) ?? null);

  function failed(e: unknown) {
    setAnswer(null);
    if (e instanceof ApiError && e.fields && Object.keys(e.fields).length) setErrors({ ...fieldErrors(e.fields), form: e.message });
    else setErrors({ form: (e as Error).message });
  }

  async function sendRow() {
    const row = rowOf(fields, values);
    setBusy(true);
    setErrors({});
    onInput(null);
    try {
      setAnswer(await runsApi.predict(run.id, { input: row }));
      setInput({ kind: "row", row });
      onInput({ kind: "row", row });
    } catch (e) {
      failed(e);
      setInput(null);
    } finally {
      setBusy(false);
    }
  }

  // A new image replaces the last one at once: its answer, and what the explain panel shows of it.
  async function sendImage(file: File) {
    setBusy(true);
    setErrors({});
    setAnswer(null);
    onInput(null);
    try {
      const dataUrl = await readAsDataUrl(file);
      setInput({ kind: "image", dataUrl, name: file.name });
      const answer = await runsApi.predictImage(run.id, file, file.name);
      const sent: UserInput = { kind: "image", dataUrl, name: file.name, seen: answer.seen };
      setAnswer(answer);
      setInput(sent);
      onInput(sent);
    } catch (e) {
      failed(e);
    } finally {
      setBusy(false);
    }
  }

  async function invert() {
    if (input?.kind !== "image") return;
    try {
      await sendImage(await invertedFile(input.dataUrl, input.name));
    } catch (e) {
      setErrors({ form: (e as Error).message });
    }
  }

  async function fillFromTest(index: number) {
    try {
      const sample = await runsApi.sample(run.id, index);
      setValues(valuesOf(fields, sample.values));
      setErrors({});
    } catch (e) {
      setErrors({ form: (e as Error).message });
    }
  }

  return (
    <section className="panel" aria-labelledby={`${ids}-h`} data-testid="predict-panel">
      <h2 id={`${ids}-h`}>Try it on your input</h2>
      {!trained && <p className="muted">Predictions are available once the run has succeeded.</p>}
      {trained && !canEdit && <p className="muted">Editors can ask the model for predictions.</p>}
      {fields.length > 0 && (
        <form
          className="predict-form"
          data-testid="predict-form"
          onSubmit={(e) => {
            e.preventDefault();
            void sendRow();
          }}
        >
          {fields.map((f) => {
            const id = `${ids}-f-${f.name}`;
            const error = errors[f.name];
            return (
              <div className="field" key={f.name}>
                <label htmlFor={id}>
                  {f.name} <span className="muted small">{f.kind === "number" ? "number" : "category"}</span>
                </label>
                {f.kind === "category" && f.categories.length > 0 ? (
                  <select
                    id={id}
                    data-testid={`predict-field-${f.name}`}
                    value={values[f.name] ?? ""}
                    disabled={off}
                    aria-invalid={!!error}
                    onChange={(e) => setValues({ ...values, [f.name]: e.target.value })}
                  >
                    <option value="">(empty)</option>
                    {f.categories.map((c) => (
                      <option key={c} value={c}>
                        {c}
                      </option>
                    ))}
                  </select>
                ) : (
                  <input
                    id={id}
                    data-testid={`predict-field-${f.name}`}
                    type="text"
                    inputMode={f.kind === "number" ? "decimal" : undefined}
                    placeholder="(empty)"
                    value={values[f.name] ?? ""}
                    disabled={off}
                    aria-invalid={!!error}
                    onChange={(e) => setValues({ ...values, [f.name]: e.target.value })}
                  />
                )}
                {error && (
                  <p className="field-error" data-testid={`predict-error-${f.name}`}>
                    {error}
                  </p>
                )}
              </div>
            );
          })}
          <div className="row">
            <button type="submit" className="primary" data-testid="predict-submit" disabled={off}>
              {busy ? "Asking…" : "Predict"}
            </button>
            <button type="button" className="link" disabled={off} onClick={() => void fillFromTest(0)}>
              Fill in test row 0
            </button>
          </div>
        </form>
      )}
      {images && (
        <div
          className={`drop-zone${dragging ? " dragging" : ""}`}
          data-testid="predict-drop"
          onDragOver={(e) => {
            e.preventDefault();
            setDragging(true);
          }}
          onDragLeave={() => setDragging(false)}
          onDrop={(e) => {
            e.preventDefault();
            setDragging(false);
            const file = e.dataTransfer.files[0];
            if (file && !off) void sendImage(file);
          }}
        >
          <label htmlFor={`${ids}-image`}>Drop an image here, or choose one</label>
          <input
            id={`${ids}-image`}
            data-testid="predict-image"
            type="file"
            accept="image/*"
            disabled={off}
            onChange={(e) => {
              const file = e.target.files?.[0];
              if (file) void sendImage(file);
              e.target.value = "";
            }}
          />
          {errors.image && (
            <p className="field-error" data-testid="predict-error-image">
              {errors.image}
            </p>
          )}
        </div>
      )}
      {images && trained && <ImageGuide summary={summary} training={training} upload={input?.kind === "image" ? input : null} onInvert={canEdit ? () => void invert() : undefined} busy={busy} />}
      {!fields.length && !images && trained && <p className="muted">This dataset has no named columns or images to type in.</p>}
      {errors.form && !Object.keys(errors).some((k) => k !== "form") && (
        <p className="error" role="alert">
          {errors.form}
        </p>
      )}
      {errors.input && <p className="field-error">{errors.input}</p>}
      {answer && (
        <>
          <PredictAnswerView answer={answer} />
          {input && canEdit && (
            <button type="button" data-testid="predict-explain" onClick={onExplain}>
              Explain this input
            </button>
          )}
        </>
      )}
    </section>
  );
}
