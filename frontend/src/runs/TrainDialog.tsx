// "Train" in the editor, "Run again" and the checkpoints' "Fine-tune" / "Resume" on a run page: pick
// a dataset and the training settings, optionally start from a checkpoint (the plan of what loads is
// listed node by node first), start a run, open its page.
import { useEffect, useId, useRef, useState } from "react";
import { ApiError, api, resultsOf } from "../api/client";
import { formatShape } from "../format";
import { navigate } from "../router";
import { type RunCreateBody, runsApi } from "./api";
import {
  type ConfigField,
  type ConfigForm,
  type FormValues,
  type MappedErrors,
  configOver,
  loadConfigForm,
  mapServerErrors,
  valuesFromConfig,
  withValue,
} from "./configForm";
import { type InitChoice, type InitMode, type InitPlan, fetchInitPlan, planView } from "./initPlan";
import type { Checkpoint, Dataset, Run } from "./types";

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
            {field.choiceLabels?.[c] ?? c}
          </option>
        ))}
      </select>
    );
  return (
    <input
      {...common}
      type="text"
      inputMode={field.kind === "int" ? "numeric" : field.kind === "float" ? "decimal" : undefined}
      value={String(value)}
      onChange={(e) => onChange(e.target.value)}
    />
  );
}

/**
 * The training-config fields (the train dialog's and the new-sweep form's base config: one form).
 * `errors` are keyed by field path; `prefix` makes the element ids unique on the page.
 */
export function ConfigFields({
  form,
  values,
  errors,
  prefix,
  onChange,
}: {
  form: ConfigForm;
  values: FormValues;
  errors: Record<string, string[]>;
  prefix: string;
  onChange: (path: string, value: string | boolean) => void;
}) {
  const shown = form.fields.filter((f) => !f.when || f.when(values));
  return (
    <div className="config-grid">
      {shown.map((f) => {
        const id = `${prefix}-${f.path}`;
        const problems = errors[f.path];
        return (
          <div key={f.path} className={`field${f.kind === "bool" ? " field-check" : ""}`}>
            <label htmlFor={id}>{f.label}</label>
            <FieldInput field={f} id={id} value={values[f.path] ?? ""} onChange={(v) => onChange(f.path, v)} />
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
  );
}

/** Nodes whose parameters stay unchanged during training (`config.freeze`), picked from the graph. */
function FreezeChooser({ nodes, chosen, onChange, errors }: { nodes: string[]; chosen: string[]; onChange: (ids: string[]) => void; errors?: string[] }) {
  if (nodes.length === 0) return null;
  return (
    <fieldset className="freeze-chooser" data-testid="train-freeze">
      <legend>Freeze (these nodes' weights do not train)</legend>
      {nodes.map((id) => (
        <label key={id} className="row">
          <input
            type="checkbox"
            data-testid={`freeze-${id}`}
            checked={chosen.includes(id)}
            onChange={(e) => onChange(e.target.checked ? [...chosen, id] : chosen.filter((c) => c !== id))}
          />
          {id}
        </label>
      ))}
      {errors?.map((m) => (
        <p key={m} className="field-error" data-testid="error-freeze" role="alert">
          {m}
        </p>
      ))}
    </fieldset>
  );
}

/** The plan of a start from a checkpoint: what loads, and node by node what does not. */
export function InitPlanView({ plan }: { plan: InitPlan }) {
  const view = planView(plan);
  return (
    <div className="init-plan" data-testid="init-plan">
      {view.problems.map((m) => (
        <p key={m} className="error" role="alert" data-testid="init-problem">
          {m}
        </p>
      ))}
      <p data-testid="init-loaded">
        {view.loaded} parameter{view.loaded === 1 ? "" : "s"} load from the checkpoint
        {view.exact ? "; every parameter of the graph matches." : "; these do not:"}
      </p>
      {!view.exact && (
        <table className="table small" data-testid="init-mismatches">
          <thead>
            <tr>
              <th scope="col">node</th>
              <th scope="col">parameter</th>
              <th scope="col">what happens</th>
            </tr>
          </thead>
          <tbody>
            {view.nodes.flatMap((n) =>
              n.rows.map((r, i) => (
                <tr key={`${n.node}.${r.parameter}.${r.kind}`} data-testid={`init-node-${n.node}`} data-kind={r.kind}>
                  {i === 0 && (
                    <th scope="row" rowSpan={n.rows.length}>
                      {n.node}
                    </th>
                  )}
                  <td>{r.parameter}</td>
                  <td className={r.kind === "mismatched" ? "warn" : undefined}>{r.text}</td>
                </tr>
              )),
            )}
          </tbody>
        </table>
      )}
    </div>
  );
}

const NO_ERRORS_INIT: string[] = [];

/** "Start from": nothing, or a checkpoint of a run (source run, checkpoint, mode) and its plan. */
function InitChooser({
  team,
  graphId,
  revision,
  value,
  onChange,
  onPlan,
  errors,
  epochs,
}: {
  team: number | null;
  graphId: number;
  revision: number;
  value: InitChoice | null;
  onChange: (init: InitChoice | null) => void;
  onPlan: (plan: InitPlan | null) => void;
  errors: string[];
  /** The new run's epochs: a resume is checked against them. */
  epochs: number | null;
}) {
  const ids = useId();
  const [on, setOn] = useState(value !== null);
  const [runs, setRuns] = useState<Run[] | null>(null);
  const [checkpoints, setCheckpoints] = useState<Checkpoint[] | null>(null);
  const [plan, setPlan] = useState<InitPlan | null>(null);
  const [planError, setPlanError] = useState<string | null>(null);
  const runId = value?.run ?? null;

  useEffect(() => {
    if (!on || team === null) return;
    let live = true;
    runsApi.runs(team).then(
      (list) => live && setRuns(list.filter((r) => r.status !== "queued")),
      () => live && setRuns([]),
    );
    return () => {
      live = false;
    };
  }, [on, team]);

  useEffect(() => {
    setCheckpoints(null);
    if (runId === null) return;
    let live = true;
    runsApi.checkpoints(runId).then(
      (list) => live && setCheckpoints(list.filter((c) => c.available)),
      () => live && setCheckpoints([]),
    );
    return () => {
      live = false;
    };
  }, [runId]);

  const checkpoint = value?.checkpoint ?? "";
  const mode = value?.mode ?? "finetune";
  const resumeEpochs = mode === "resume" && epochs !== null && Number.isInteger(epochs) && epochs > 0 ? epochs : null;
  useEffect(() => {
    setPlan(null);
    setPlanError(null);
    onPlan(null);
    if (runId === null || !checkpoint) return;
    const abort = new AbortController();
    const body = { graph: graphId, revision, from_run: runId, checkpoint, mode, ...(resumeEpochs ? { epochs: resumeEpochs } : {}) };
    fetchInitPlan(body, abort.signal).then(
      (p) => {
        setPlan(p);
        onPlan(p);
      },
      (e) => {
        if (abort.signal.aborted) return;
        const fields = e instanceof ApiError && e.fields ? Object.values(e.fields).flat().map(String) : [];
        setPlanError(fields.length ? fields.join(" ") : (e as Error).message);
      },
    );
    return () => abort.abort();
    // onPlan is the parent's setter: stable.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [graphId, revision, runId, checkpoint, mode, resumeEpochs]);

  const source = runs?.find((r) => r.id === runId);
  return (
    <fieldset className="init-chooser" data-testid="train-init">
      <legend>Start from</legend>
      <div className="row">
        <label className="row">
          <input
            type="radio"
            name={`${ids}-from`}
            data-testid="init-scratch"
            checked={!on}
            onChange={() => {
              setOn(false);
              onChange(null);
            }}
          />
          new weights
        </label>
        <label className="row">
          <input type="radio" name={`${ids}-from`} data-testid="init-checkpoint" checked={on} onChange={() => setOn(true)} />
          a checkpoint of a run
        </label>
      </div>
      {on && (
        <div className="init-fields">
          <div className="field">
            <label htmlFor={`${ids}-run`}>Run</label>
            <select
              id={`${ids}-run`}
              data-testid="init-run"
              value={runId ?? ""}
              onChange={(e) => onChange(e.target.value ? { run: Number(e.target.value), checkpoint: "", mode } : null)}
            >
              <option value="">{runs === null ? "Loading runs…" : "Choose a run"}</option>
              {/* The run chosen elsewhere stays listed even before the list has come. */}
              {runId !== null && !source && <option value={runId}>#{runId}</option>}
              {runs?.map((r) => (
                <option key={r.id} value={r.id}>
                  #{r.id} {r.graph_name} rev {r.revision} · {r.status}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${ids}-ckpt`}>Checkpoint</label>
            <select
              id={`${ids}-ckpt`}
              data-testid="init-checkpoint-name"
              value={checkpoint}
              disabled={runId === null}
              onChange={(e) => runId !== null && onChange({ run: runId, checkpoint: e.target.value, mode })}
            >
              <option value="">{runId !== null && checkpoints === null ? "Loading…" : "Choose a checkpoint"}</option>
              {checkpoint && !checkpoints?.some((c) => c.name === checkpoint) && <option value={checkpoint}>{checkpoint}</option>}
              {checkpoints?.map((c) => (
                <option key={c.name} value={c.name}>
                  {c.name} · step {c.step} · epoch {c.epoch.toFixed(1)}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${ids}-mode`}>Mode</label>
            <select
              id={`${ids}-mode`}
              data-testid="init-mode"
              value={mode}
              disabled={runId === null}
              onChange={(e) => runId !== null && onChange({ run: runId, checkpoint, mode: e.target.value as InitMode })}
            >
              <option value="finetune">fine-tune (load what matches)</option>
              <option value="resume">resume for more epochs</option>
            </select>
          </div>
        </div>
      )}
      {on && runId !== null && checkpoint && !plan && !planError && <p className="muted">Checking what loads…</p>}
      {planError && (
        <p className="error" role="alert" data-testid="init-plan-error">
          {planError}
        </p>
      )}
      {plan && <InitPlanView plan={plan} />}
      {errors.map((m) => (
        <p key={m} className="field-error" role="alert" data-testid="error-init">
          {m}
        </p>
      ))}
    </fieldset>
  );
}

export interface TrainDialogProps {
  graphId: number;
  revision: number;
  onClose: () => void;
  /** "Run again" and starts from a checkpoint: the run whose dataset, config and split fill the form. */
  from?: Run | null;
  /** Start from this checkpoint ("Fine-tune from this", "Resume for more epochs"). */
  init?: InitChoice | null;
}

/** The form values a run's settings give (resume: twice the epochs, since it continues). */
export function valuesForRun(form: ConfigForm, run: Pick<Run, "config">, init?: InitChoice | null): FormValues {
  const values = valuesFromConfig(form, run.config);
  const epochs = Number(run.config.epochs);
  if (init?.mode === "resume" && Number.isInteger(epochs) && epochs > 0) values.epochs = String(epochs * 2);
  return values;
}

/** The data settings of a run to train again on: its split and transforms. */
export function recipeOf(run: Pick<Run, "recipe"> | null | undefined): Pick<RunCreateBody, "split" | "transforms"> {
  const out: Pick<RunCreateBody, "split" | "transforms"> = {};
  const recipe = (run?.recipe ?? {}) as Record<string, unknown>;
  if (recipe.split && typeof recipe.split === "object") out.split = recipe.split;
  if (recipe.transforms && typeof recipe.transforms === "object") out.transforms = recipe.transforms;
  return out;
}

/** Splits a 400's fields into the start-from ones (`init`, `init.*`, `from_run`, `checkpoint`) and the rest. */
export function splitInitErrors(fields: Record<string, unknown> | null | undefined): { init: string[]; rest: Record<string, unknown> } {
  const init: string[] = [];
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields ?? {})) {
    if (k === "init" || k.startsWith("init.") || k === "from_run" || k === "checkpoint") {
      const where = k.startsWith("init.") ? k.slice(5) : k === "init" ? "" : k;
      for (const m of Array.isArray(v) ? v : [v]) init.push(where ? `${where}: ${String(m)}` : String(m));
    } else rest[k] = v;
  }
  return { init, rest };
}

/**
 * The dataset the form starts on: the run's own for "Run again" and a start from its checkpoints;
 * none for a run without one (imported weights), whose user must pick the data to train on.
 */
export function datasetOfRun(run: Pick<Run, "dataset"> | null | undefined): string {
  return run?.dataset != null ? String(run.dataset) : "";
}

/**
 * What the priority field sends: nothing when blank (the server's default, 0), a whole number as a
 * number, anything else as typed, so that the server's 400 on `priority` says what is wrong.
 */
export function priorityBody(text: string): Pick<RunCreateBody, "priority"> {
  const t = text.trim();
  if (t === "") return {};
  return { priority: /^[+-]?\d+$/.test(t) ? Number(t) : t };
}

/** The `priority` messages of a 400, taken out of `fields` (they show next to the priority field). */
export function takePriorityErrors(fields: Record<string, unknown>): string[] {
  const v = fields.priority;
  delete fields.priority;
  return v === undefined ? [] : (Array.isArray(v) ? v : [v]).map(String);
}

export function TrainDialog({ graphId, revision: firstRevision, onClose, from = null, init: initialInit = null }: TrainDialogProps) {
  const ids = useId();
  // Opened from a run, the graph's other revisions can be trained too (fine-tune a changed graph).
  const [revision, setRevision] = useState(firstRevision);
  const [revisions, setRevisions] = useState<number[]>([]);
  const dialog = useRef<HTMLDialogElement>(null);
  const [datasets, setDatasets] = useState<Dataset[] | null>(null);
  const [datasetId, setDatasetId] = useState<string>(datasetOfRun(from));
  // A run without a dataset (imported weights): nothing is picked for the user.
  const mustPickDataset = from !== null && from.dataset == null;
  const [priority, setPriority] = useState("0");
  const [team, setTeam] = useState<number | null>(from?.team ?? null);
  // The fields come from the engine's schema (GET /api/runs/config-schema/): null while loading.
  const [form, setForm] = useState<ConfigForm | null>(null);
  const [values, setValues] = useState<FormValues>({});
  const [nodes, setNodes] = useState<string[]>([]);
  const [freeze, setFreeze] = useState<string[]>(() => (Array.isArray(from?.config.freeze) ? (from!.config.freeze as string[]) : []));
  const [init, setInit] = useState<InitChoice | null>(initialInit);
  const [plan, setPlan] = useState<InitPlan | null>(null);
  const [initErrors, setInitErrors] = useState<string[]>(NO_ERRORS_INIT);
  const [errors, setErrors] = useState<MappedErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    dialog.current?.showModal();
  }, []);

  useEffect(() => {
    if (!from) return;
    let live = true;
    api.revisions(graphId).then(
      (p) => live && setRevisions(resultsOf(p).map((r) => r.number).sort((a, b) => b - a)),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [from, graphId]);

  useEffect(() => {
    let live = true;
    loadConfigForm().then(
      (f) => {
        if (!live) return;
        setForm(f);
        setValues(from ? valuesForRun(f, from, initialInit) : f.defaultValues());
      },
      (e) => live && setErrors((old) => ({ ...old, general: [`The training settings could not be loaded: ${(e as Error).message}`] })),
    );
    return () => {
      live = false;
    };
    // The dialog fills its form once, from the run it was opened with.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    let live = true;
    // The revision's input shape picks the first dataset offered (a missing revision picks none).
    const shapes = api.revision(graphId, revision).then(
      (r) => {
        // Only nodes with weights can be frozen: the check's parameter counts say which.
        api.validate(r.spec).then(
          (report) => live && setNodes((r.spec.nodes ?? []).map((n) => n.id).filter((id) => (report.nodes[id]?.params ?? 0) > 0)),
          () => live && setNodes((r.spec.nodes ?? []).map((n) => n.id)),
        );
        return r.spec.inputs.map((i) => [...i.shape]);
      },
      () => null,
    );
    api
      .graph(graphId)
      .then((g) => {
        if (live) setTeam(g.team);
        return Promise.all([runsApi.datasets(g.team), shapes]);
      })
      .then(
        ([list, inputShapes]) => {
          if (!live) return;
          const ready = list.filter((d) => d.status === "ready" && d.summary?.task);
          setDatasets(ready);
          const first = defaultDataset(ready, inputShapes);
          if (first && !mustPickDataset) setDatasetId((id) => id || String(first.id));
        },
        (e) => live && setErrors({ ...NO_ERRORS, general: [(e as Error).message] }),
      );
    return () => {
      live = false;
    };
  }, [graphId, revision, mustPickDataset]);

  const picked = datasets?.find((d) => String(d.id) === datasetId);
  // The run's own data: train again on its split and transforms.
  const sameData = from !== null && from.dataset != null && String(from.dataset) === datasetId;
  const planBlocks = init !== null && (plan === null || (plan.problems?.length ?? 0) > 0);

  async function start() {
    if (!form) return;
    const { config: built, errors: local } = form.buildConfig(values);
    const fields: Record<string, string[]> = { ...local };
    if (!datasetId) fields.dataset = ["Choose a dataset."];
    if (init && !init.checkpoint) {
      setInitErrors(["Choose the run and the checkpoint to start from, or start from new weights."]);
      return;
    }
    if (Object.keys(fields).length) {
      setErrors({ ...NO_ERRORS, fields });
      return;
    }
    const config = from ? configOver(from.config, built, form, values) : built;
    if (freeze.length) config.freeze = freeze;
    else delete config.freeze;
    setBusy(true);
    setErrors(NO_ERRORS);
    setInitErrors(NO_ERRORS_INIT);
    const body: RunCreateBody = {
      graph: graphId,
      revision,
      dataset: Number(datasetId),
      config,
      ...(sameData ? recipeOf(from) : {}),
      ...(init ? { init } : {}),
      ...priorityBody(priority),
    };
    try {
      const run = await runsApi.createRun(body);
      onClose();
      navigate(`/runs/${run.id}`);
    } catch (e) {
      if (e instanceof ApiError) {
        const { init: initProblems, rest } = splitInitErrors(e.fields);
        const priorityProblems = takePriorityErrors(rest);
        const freezeProblems = Object.entries(rest)
          .filter(([k]) => k === "config.freeze" || k.startsWith("config.freeze."))
          .flatMap(([, v]) => (Array.isArray(v) ? v : [v]).map(String));
        for (const k of Object.keys(rest)) if (k === "config.freeze" || k.startsWith("config.freeze.")) delete rest[k];
        const mapped = mapServerErrors(rest, form.fields.map((f) => f.path));
        if (freezeProblems.length) mapped.fields.freeze = freezeProblems;
        if (priorityProblems.length) mapped.fields.priority = priorityProblems;
        setInitErrors(initProblems);
        if (!initProblems.length && !mapped.graph.length && !mapped.general.length && !Object.keys(mapped.fields).length) mapped.general.push(e.message);
        setErrors(mapped);
      } else setErrors({ ...NO_ERRORS, general: [(e as Error).message] });
      setBusy(false);
    }
  }

  const title = init ? (init.mode === "resume" ? `Resume run #${init.run} for more epochs` : `Fine-tune revision ${revision}`) : from ? `Run #${from.id} again` : `Train revision ${revision}`;

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
        <h2 id={`${ids}-title`}>{title}</h2>
        {from && revisions.length > 1 && (
          <div className="field">
            <label htmlFor={`${ids}-revision`}>Graph revision</label>
            <select id={`${ids}-revision`} data-testid="train-revision" value={revision} onChange={(e) => setRevision(Number(e.target.value))}>
              {revisions.map((n) => (
                <option key={n} value={n}>
                  {n}
                  {n === from.revision ? ` (run #${from.id}'s)` : ""}
                </option>
              ))}
            </select>
          </div>
        )}
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
              {(mustPickDataset || !datasetId) && (
                <option value="" disabled>
                  Choose a dataset
                </option>
              )}
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
              {sameData ? ` · the split of run #${from?.id}` : ""}
            </p>
          )}
          {mustPickDataset && !picked && (
            <p className="help" data-testid="train-pick-dataset">
              Run #{from?.id} holds weights trained elsewhere, without a dataset: choose the one to train on.
            </p>
          )}
          {errors.fields.dataset?.map((m) => (
            <p key={m} className="field-error" data-testid="error-dataset">
              {m}
            </p>
          ))}
        </div>
        <InitChooser team={team} graphId={graphId} revision={revision} value={init} onChange={(v) => {
            setInit(v);
            setInitErrors(NO_ERRORS_INIT);
          }}
          onPlan={setPlan}
          errors={initErrors}
          epochs={values.epochs !== undefined && String(values.epochs).trim() !== "" ? Number(values.epochs) : null}
        />
        {form === null && (
          <p className="muted" data-testid="train-config-loading">
            Loading the training settings…
          </p>
        )}
        {form && (
          <ConfigFields
            form={form}
            values={values}
            errors={errors.fields}
            prefix={ids}
            onChange={(path, v) => {
              setValues((old) => withValue(old, path, v));
              // A changed value deserves a fresh verdict: drop the old message.
              setErrors((old) => (old.fields[path] ? { ...old, fields: { ...old.fields, [path]: [] } } : old));
            }}
          />
        )}
        <div className="config-grid">
          <div className="field">
            <label htmlFor={`${ids}-priority`}>Priority</label>
            <input
              id={`${ids}-priority`}
              data-testid="train-priority"
              type="text"
              inputMode="numeric"
              value={priority}
              aria-invalid={!!errors.fields.priority?.length}
              className={errors.fields.priority?.length ? "invalid" : undefined}
              onChange={(e) => {
                setPriority(e.target.value);
                setErrors((old) => (old.fields.priority ? { ...old, fields: { ...old.fields, priority: [] } } : old));
              }}
            />
            <p className="help">Order among your team's queued runs: -10..10, higher first.</p>
            {errors.fields.priority?.map((m) => (
              <p key={m} className="field-error" data-testid="error-priority" role="alert">
                {m}
              </p>
            ))}
          </div>
        </div>
        <FreezeChooser nodes={nodes} chosen={freeze} onChange={setFreeze} errors={errors.fields.freeze} />
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
          <button
            type="submit"
            className="primary"
            data-testid="train-start"
            disabled={busy || !form || !datasets?.length || planBlocks}
            title={planBlocks ? "The checkpoint's plan must be ready and without problems" : undefined}
          >
            {busy ? "Starting…" : "Start training"}
          </button>
        </div>
      </form>
    </dialog>
  );
}
