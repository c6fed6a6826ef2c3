// "Train" in the editor: pick a dataset and a few training settings, start a run, open its page.
import { useEffect, useId, useRef, useState } from "react";
import { ApiError, api } from "../api/client";
import { formatShape } from "../format";
import { navigate } from "../router";
import { runsApi } from "./api";
import { type ConfigField, type ConfigForm, type FormValues, type MappedErrors, loadConfigForm, mapServerErrors } from "./configForm";
import type { Dataset } from "./types";

const NO_ERRORS: MappedErrors = { fields: {}, graph: [], general: [] };

export interface TrainButtonProps {
  graphId: number;
  savedRevision: number | null;
  dirty: boolean;
  /** The live check's verdict on the canvas (null while it is not known yet). */
  valid: boolean | null;
}

/** Why training cannot start yet, or null when it can. */
export function trainBlocker(p: Pick<TrainButtonProps, "savedRevision" | "dirty" | "valid">): string | null {
  if (p.savedRevision === null) return "Save the graph first";
  if (p.dirty) return "Save your changes first";
  if (p.valid === null) return "Checking the graph…";
  if (!p.valid) return "Fix the graph's errors first";
  return null;
}

/** The dataset to offer first: the first whose feature shape is the graph's (only) input shape. */
export function defaultDataset(ready: Dataset[], inputShapes: number[][] | null): Dataset | undefined {
  const shape = inputShapes?.length === 1 ? inputShapes[0] : null;
  const fits = shape && ready.find((d) => JSON.stringify(d.summary?.feature_shape ?? null) === JSON.stringify(shape));
  return fits || ready[0];
}

export function TrainButton(props: TrainButtonProps) {
  const [open, setOpen] = useState(false);
  const blocker = trainBlocker(props);
  return (
    <>
      <button
        type="button"
        data-testid="train"
        aria-label={blocker ? `Train (${blocker})` : "Train this revision"}
        title={blocker ?? `Train revision ${props.savedRevision}`}
        disabled={blocker !== null}
        onClick={() => setOpen(true)}
      >
        ▶ Train
      </button>
      <a
        className="toolbar-link"
        href={`${import.meta.env.BASE_URL}runs?graph=${props.graphId}`}
        data-testid="graph-runs"
        onClick={(e) => {
          e.preventDefault();
          navigate(`/runs?graph=${props.graphId}`);
        }}
      >
        Runs
      </a>
      {open && props.savedRevision !== null && <TrainDialog graphId={props.graphId} revision={props.savedRevision} onClose={() => setOpen(false)} />}
    </>
  );
}

function FieldInput({ field, value, onChange, id }: { field: ConfigField; value: string | boolean; onChange: (v: string | boolean) => void; id: string }) {
  const common = { id, "data-testid": `config-${field.path}` };
  if (field.kind === "bool") return <input type="checkbox" {...common} checked={value === true} onChange={(e) => onChange(e.target.checked)} />;
  if (field.kind === "choice")
    return (
      <select {...common} value={String(value)} onChange={(e) => onChange(e.target.value)}>
        {field.choices!.map((c) => (
          <option key={c} value={c}>
            {c}
          </option>
        ))}
      </select>
    );
  return (
    <input
      {...common}
      type="text"
      inputMode={field.kind === "int" ? "numeric" : "decimal"}
      value={String(value)}
      onChange={(e) => onChange(e.target.value)}
    />
  );
}

export function TrainDialog({ graphId, revision, onClose }: { graphId: number; revision: number; onClose: () => void }) {
  const ids = useId();
  const dialog = useRef<HTMLDialogElement>(null);
  const [datasets, setDatasets] = useState<Dataset[] | null>(null);
  const [datasetId, setDatasetId] = useState<string>("");
  // The fields come from the engine's schema (GET /api/runs/config-schema/): null while loading.
  const [form, setForm] = useState<ConfigForm | null>(null);
  const [values, setValues] = useState<FormValues>({});
  const [errors, setErrors] = useState<MappedErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    dialog.current?.showModal();
  }, []);

  useEffect(() => {
    let live = true;
    loadConfigForm().then(
      (f) => {
        if (!live) return;
        setForm(f);
        setValues(f.defaultValues());
      },
      (e) => live && setErrors((old) => ({ ...old, general: [`The training settings could not be loaded: ${(e as Error).message}`] })),
    );
    return () => {
      live = false;
    };
  }, []);

  useEffect(() => {
    let live = true;
    // The revision's input shape picks the first dataset offered (a missing revision picks none).
    const shapes = api.revision(graphId, revision).then(
      (r) => r.spec.inputs.map((i) => [...i.shape]),
      () => null,
    );
    api
      .graph(graphId)
      .then((g) => Promise.all([runsApi.datasets(g.team), shapes]))
      .then(
        ([list, inputShapes]) => {
          if (!live) return;
          const ready = list.filter((d) => d.status === "ready" && d.summary?.task);
          setDatasets(ready);
          const first = defaultDataset(ready, inputShapes);
          if (first) setDatasetId((id) => id || String(first.id));
        },
        (e) => live && setErrors({ ...NO_ERRORS, general: [(e as Error).message] }),
      );
    return () => {
      live = false;
    };
  }, [graphId, revision]);

  const shown = form ? form.fields.filter((f) => !f.when || f.when(values)) : [];
  const picked = datasets?.find((d) => String(d.id) === datasetId);

  async function start() {
    if (!form) return;
    const { config, errors: local } = form.buildConfig(values);
    const fields: Record<string, string[]> = { ...local };
    if (!datasetId) fields.dataset = ["Choose a dataset."];
    if (Object.keys(fields).length) {
      setErrors({ ...NO_ERRORS, fields });
      return;
    }
    setBusy(true);
    setErrors(NO_ERRORS);
    try {
      const run = await runsApi.createRun({ graph: graphId, revision, dataset: Number(datasetId), config });
      navigate(`/runs/${run.id}`);
    } catch (e) {
      if (e instanceof ApiError) {
        const mapped = mapServerErrors(e.fields, form.fields.map((f) => f.path));
        if (!mapped.graph.length && !mapped.general.length && !Object.keys(mapped.fields).length) mapped.general.push(e.message);
        setErrors(mapped);
      } else setErrors({ ...NO_ERRORS, general: [(e as Error).message] });
      setBusy(false);
    }
  }

  return (
    <dialog
      ref={dialog}
      className="train-dialog"
      data-testid="train-dialog"
      aria-labelledby={`${ids}-title`}
      onClose={onClose}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          void start();
        }}
      >
        <h2 id={`${ids}-title`}>Train revision {revision}</h2>
        <div className="field">
          <label htmlFor={`${ids}-dataset`}>Dataset</label>
          {datasets === null ? (
            <p className="muted">Loading datasets…</p>
          ) : datasets.length === 0 ? (
            <p className="muted" data-testid="train-no-datasets">
              No ready dataset with a target yet.{" "}
              <a
                href={`${import.meta.env.BASE_URL}datasets`}
                onClick={(e) => {
                  e.preventDefault();
                  navigate("/datasets");
                }}
              >
                Add one
              </a>
              .
            </p>
          ) : (
            <select
              id={`${ids}-dataset`}
              data-testid="train-dataset"
              value={datasetId}
              aria-invalid={!!errors.fields.dataset}
              className={errors.fields.dataset ? "invalid" : undefined}
              onChange={(e) => {
                setDatasetId(e.target.value);
                setErrors(NO_ERRORS);
              }}
            >
              {datasets.map((d) => (
                <option key={d.id} value={d.id}>
                  {d.name} ({d.kind})
                </option>
              ))}
            </select>
          )}
          {picked && (
            <p className="help">
              {picked.summary.task} · features {formatShape(picked.summary.feature_shape)}
              {picked.summary.num_classes ? ` · ${picked.summary.num_classes} classes` : ""} · {picked.summary.rows?.total ?? "?"} rows
            </p>
          )}
          {errors.fields.dataset?.map((m) => (
            <p key={m} className="field-error" data-testid="error-dataset">
              {m}
            </p>
          ))}
        </div>
        {form === null && (
          <p className="muted" data-testid="train-config-loading">
            Loading the training settings…
          </p>
        )}
        <div className="config-grid">
          {shown.map((f) => {
            const id = `${ids}-${f.path}`;
            const problems = errors.fields[f.path];
            return (
              <div key={f.path} className={`field${f.kind === "bool" ? " field-check" : ""}`}>
                <label htmlFor={id}>{f.label}</label>
                <FieldInput field={f} id={id} value={values[f.path] ?? ""} onChange={(v) => {
                    setValues((old) => ({ ...old, [f.path]: v }));
                    // A changed value deserves a fresh verdict: drop the old message.
                    setErrors((old) => (old.fields[f.path] ? { ...old, fields: { ...old.fields, [f.path]: [] } } : old));
                  }}
                />
                {f.help && <p className="help">{f.help}</p>}
                {problems?.map((m) => (
                  <p key={m} className="field-error" data-testid={`error-${f.path}`} role="alert">
                    {m}
                  </p>
                ))}
              </div>
            );
          })}
        </div>
        {errors.graph.length > 0 && (
          <div className="error" role="alert" data-testid="train-graph-errors">
            <p>The graph does not fit this dataset:</p>
            <ul>
              {errors.graph.map((m) => (
                <li key={m}>{m}</li>
              ))}
            </ul>
          </div>
        )}
        {errors.general.map((m) => (
          <p key={m} className="error" role="alert" data-testid="train-error">
            {m}
          </p>
        ))}
        <div className="row dialog-actions">
          <span className="spacer" />
          <button type="button" onClick={onClose} data-testid="train-close">
            Close
          </button>
          <button type="submit" className="primary" data-testid="train-start" disabled={busy || !form || !datasets?.length}>
            {busy ? "Starting…" : "Start training"}
          </button>
        </div>
      </form>
    </dialog>
  );
}
