// Try a served model on raw input: one field per input the server's metadata lists (a number for
// FP32, text for BYTES, an image upload sent as base64 BYTES), the label and probabilities it
// answers, and the same request as curl and Python to copy, with a placeholder token.
import { useEffect, useMemo, useState } from "react";
import {
  type FieldKind,
  type ModelMetadata,
  type Prediction,
  type TensorMeta,
  curlSnippet,
  fieldKind,
  inferBody,
  inferUrl,
  pythonSnippet,
  readPrediction,
  servingRequest,
  type InferAnswer,
} from "./serving";

export interface TryItProps {
  /** The served URL (null: the model is not served). */
  endpoint: string | null;
  /** Versions an alias names (the server serves those), e.g. [[2, "production"], [3, "staging"]]. */
  served: [number, string][];
  /** Class names of the probabilities, when the version recorded them. */
  classes?: readonly string[];
}

/** The body the snippets show: the form's values, or zeros and blanks while the form is incomplete. */
export function snippetRequest(inputs: TensorMeta[], values: Record<string, string>) {
  try {
    return inferBody(inputs, values);
  } catch {
    const filled = Object.fromEntries(
      inputs.map((i) => [i.name, values[i.name] || (fieldKind(i) === "number" ? "0" : fieldKind(i) === "image" ? "<base64 of your image>" : "")]),
    );
    return inferBody(inputs, filled);
  }
}

function readBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
    reader.onerror = () => reject(new Error(`Could not read ${file.name}.`));
    reader.readAsDataURL(file);
  });
}

export function TryIt({ endpoint, served, classes = [] }: TryItProps) {
  const [meta, setMeta] = useState<ModelMetadata | null>(null);
  const [values, setValues] = useState<Record<string, string>>({});
  const [version, setVersion] = useState<number | null>(null);
  const [answer, setAnswer] = useState<Prediction | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [copied, setCopied] = useState<string | null>(null);

  useEffect(() => {
    if (!endpoint) return;
    const abort = new AbortController();
    servingRequest<ModelMetadata>("GET", endpoint, undefined, abort.signal)
      .then((m) => setMeta(m))
      .catch((e: Error) => {
        if (e.name !== "AbortError") setError(`The model server did not answer its metadata: ${e.message}`);
      });
    return () => abort.abort();
  }, [endpoint]);

  const url = endpoint ? inferUrl(endpoint, version) : "";
  const body = useMemo(() => (meta ? snippetRequest(meta.inputs, values) : null), [meta, values]);

  if (!endpoint) {
    return (
      <section className="panel" aria-labelledby="tryit-title" data-testid="try-it">
        <h2 id="tryit-title">Try it</h2>
        <p className="muted" data-testid="not-served">
          This model is not served yet: once production (or another alias) names a version and the model server runs,
          a form to try it appears here.
        </p>
      </section>
    );
  }

  const send = async () => {
    if (!meta) return;
    setBusy(true);
    setError(null);
    try {
      const request = inferBody(meta.inputs, values);
      const result = await servingRequest<InferAnswer>("POST", url, request);
      const names = (meta.outputs.find((o) => o.name === "probabilities")?.parameters?.classes as string[] | undefined) ?? classes;
      setAnswer(readPrediction(result, names));
    } catch (e) {
      setAnswer(null);
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const copy = (what: string, text: string) => {
    void navigator.clipboard?.writeText(text).then(() => setCopied(what));
  };
  const field = (input: TensorMeta, kind: FieldKind) => {
    const id = `tryit-${input.name}`;
    if (kind === "image") {
      return (
        <input
          id={id}
          type="file"
          accept="image/*"
          data-testid={`tryit-input-${input.name}`}
          onChange={(e) => {
            const file = e.target.files?.[0];
            if (file) void readBase64(file).then((b64) => setValues((v) => ({ ...v, [input.name]: b64 })), (err: Error) => setError(err.message));
          }}
        />
      );
    }
    return (
      <input
        id={id}
        type={kind === "number" ? "number" : "text"}
        step="any"
        data-testid={`tryit-input-${input.name}`}
        value={values[input.name] ?? ""}
        onChange={(e) => setValues((v) => ({ ...v, [input.name]: e.target.value }))}
      />
    );
  };
  return (
    <section className="panel" aria-labelledby="tryit-title" data-testid="try-it">
      <h2 id="tryit-title">Try it</h2>
      <p className="small muted">
        Served at <code data-testid="endpoint">{inferUrl(endpoint)}</code>
      </p>
      {served.length > 0 && (
        <label className="field">
          Version
          <select
            data-testid="tryit-version"
            value={version === null ? "" : String(version)}
            onChange={(e) => setVersion(e.target.value ? Number(e.target.value) : null)}
          >
            <option value="">the default alias</option>
            {served.map(([n, alias]) => (
              <option key={`${n}-${alias}`} value={n}>
                v{n} ({alias})
              </option>
            ))}
          </select>
        </label>
      )}
      {!meta && !error && <p className="muted">Reading the model's inputs…</p>}
      {meta && (
        <form
          className="tryit-form"
          onSubmit={(e) => {
            e.preventDefault();
            void send();
          }}
        >
          {meta.inputs.map((input) => (
            <label key={input.name} className="field" htmlFor={`tryit-${input.name}`}>
              {input.name} <span className="muted small">{input.datatype}</span>
              {field(input, fieldKind(input))}
            </label>
          ))}
          <button type="submit" className="primary" data-testid="tryit-send" disabled={busy}>
            Predict
          </button>
        </form>
      )}
      {error && (
        <p className="error" role="alert" data-testid="tryit-error">
          {error}
        </p>
      )}
      {answer && (
        <div data-testid="tryit-answer">
          <p>
            Label: <strong data-testid="tryit-label">{answer.label ?? "–"}</strong>
            {answer.version && <span className="muted small"> (answered by version {answer.version})</span>}
          </p>
          {answer.probabilities.length > 0 && (
            <table className="table small" data-testid="tryit-probabilities">
              <tbody>
                {answer.probabilities.map(([name, p]) => (
                  <tr key={name}>
                    <td>{name}</td>
                    <td>
                      <meter min={0} max={1} value={p} aria-label={`${name} probability`} /> {p.toFixed(4)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      )}
      {body && (
        <details className="snippets" data-testid="snippets">
          <summary>Call it from a program</summary>
          <p className="small muted">
            Put an API token in <code>NETLOOM_TOKEN</code> (Account → API tokens); the snippets never carry yours.
          </p>
          {(
            [
              ["curl", curlSnippet(url, body)],
              ["Python", pythonSnippet(url, body)],
            ] as const
          ).map(([what, text]) => (
            <div key={what}>
              <h3 className="small">
                {what}{" "}
                <button type="button" data-testid={`copy-${what.toLowerCase()}`} onClick={() => copy(what, text)}>
                  {copied === what ? "Copied" : "Copy"}
                </button>
              </h3>
              <pre data-testid={`snippet-${what.toLowerCase()}`}>{text}</pre>
            </div>
          ))}
        </details>
      )}
    </section>
  );
}
