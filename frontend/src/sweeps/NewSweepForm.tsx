// "New sweep": a base (graph revision, dataset, training config: the train dialog's own fields), a
// search space over config fields and the graph's node parameters, the strategy, pruner, objective,
// budget and parallelism. The server's 400 fields are shown at the field (or space row) they name.
import { useEffect, useId, useMemo, useState } from "react";
import { ApiError, api, resultsOf } from "../api/client";
import type { GraphSummary, OpSchema, Revision, RevisionSummary } from "../api/types";
import { navigate } from "../router";
import { runsApi } from "../runs/api";
import { type ConfigForm, type FormValues, loadConfigForm, withValue } from "../runs/configForm";
import { ConfigFields } from "../runs/train/ConfigFields";
import type { Dataset } from "../runs/types";
import { sweepsApi } from "./api";
import { type MappedSweepErrors, type SpaceRow, configKeyOptions, emptyRow, mapSweepErrors, nodeKeyOptions, spaceFromRows } from "./space";
import { FieldErrors, SpaceRowView } from "./SpaceRowView";
import type { SweepCreateBody, SweepPruner, SweepStrategy } from "./types";

const NO_ERRORS: MappedSweepErrors = { rows: {}, form: {}, config: {}, graph: [], general: [] };
const FORM_FIELDS = ["name", "graph", "revision", "graph_revision", "dataset", "strategy", "pruner", "objective", "objective.metric", "objective.mode", "budget", "parallelism", "seed", "space", "split", "transforms"];
const OBJECTIVES = ["val/loss", "val/accuracy", "val/f1", "val/mae", "val/r2"];

export function NewSweepForm({ team, onCancel }: { team: number; onCancel: () => void }) {
  const ids = useId();
  const [name, setName] = useState("");
  const [graphs, setGraphs] = useState<GraphSummary[] | null>(null);
  const [graphId, setGraphId] = useState("");
  const [revisions, setRevisions] = useState<RevisionSummary[]>([]);
  const [revision, setRevision] = useState("");
  const [spec, setSpec] = useState<Revision["spec"] | null>(null);
  const [ops, setOps] = useState<OpSchema[]>([]);
  const [datasets, setDatasets] = useState<Dataset[] | null>(null);
  const [datasetId, setDatasetId] = useState("");
  const [form, setForm] = useState<ConfigForm | null>(null);
  const [values, setValues] = useState<FormValues>({});
  const [rows, setRows] = useState<SpaceRow[]>([emptyRow()]);
  const [strategy, setStrategy] = useState<SweepStrategy>("tpe");
  const [pruner, setPruner] = useState<SweepPruner>("median");
  const [metric, setMetric] = useState("val/loss");
  const [mode, setMode] = useState<"min" | "max">("min");
  const [budget, setBudget] = useState("20");
  const [parallelism, setParallelism] = useState("2");
  const [seed, setSeed] = useState("0");
  const [errors, setErrors] = useState<MappedSweepErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    let live = true;
    api.graphs(team).then((p) => live && setGraphs(resultsOf(p)), () => live && setGraphs([]));
    runsApi.datasets(team).then(
      (list) => {
        if (!live) return;
        const ready = list.filter((d) => d.status === "ready" && d.summary?.task);
        setDatasets(ready);
        if (ready[0]) setDatasetId((id) => id || String(ready[0].id));
      },
      () => live && setDatasets([]),
    );
    api.ops().then((c) => live && setOps(c.ops), () => undefined);
    loadConfigForm().then(
      (f) => {
        if (!live) return;
        setForm(f);
        setValues(f.defaultValues());
      },
      (e) => live && setErrors({ ...NO_ERRORS, general: [`The training settings could not be loaded: ${(e as Error).message}`] }),
    );
    return () => {
      live = false;
    };
  }, [team]);

  useEffect(() => {
    setRevisions([]);
    setRevision("");
    setSpec(null);
    if (!graphId) return;
    let live = true;
    api.revisions(Number(graphId)).then(
      (p) => {
        if (!live) return;
        const list = resultsOf(p);
        setRevisions(list);
        const latest = Math.max(0, ...list.map((r) => r.number));
        if (latest) setRevision(String(latest));
      },
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [graphId]);

  useEffect(() => {
    if (!graphId || !revision) return;
    let live = true;
    api.revision(Number(graphId), Number(revision)).then((r) => live && setSpec(r.spec), () => live && setSpec(null));
    return () => {
      live = false;
    };
  }, [graphId, revision]);

  const options = useMemo(() => {
    const list = [...(form ? configKeyOptions(form.fields) : []), ...nodeKeyOptions(spec?.nodes ?? [], ops)];
    return new Map(list.map((o) => [o.key, o]));
  }, [form, spec, ops]);

  async function create() {
    if (!form) return;
    const { config, errors: configErrors } = form.buildConfig(values);
    const { space, errors: rowErrors } = spaceFromRows(rows);
    const local: MappedSweepErrors = { ...NO_ERRORS, rows: rowErrors, config: configErrors, form: {} };
    if (!name.trim()) local.form.name = ["Give the sweep a name."];
    if (!graphId) local.form.graph = ["Choose a graph."];
    if (!datasetId) local.form.dataset = ["Choose a dataset."];
    if (rows.length === 0) local.form.space = ["Add at least one dimension to search."];
    for (const [field, text] of [["budget", budget], ["parallelism", parallelism], ["seed", seed]] as const)
      if (!/^\d+$/.test(text.trim())) local.form[field] = ["A whole number."];
    if (Object.keys(local.form).length || Object.keys(rowErrors).length || Object.keys(configErrors).length) {
      setErrors(local);
      return;
    }
    const body: SweepCreateBody = {
      team,
      name: name.trim(),
      graph: Number(graphId),
      ...(revision ? { revision: Number(revision) } : {}),
      dataset: Number(datasetId),
      config,
      space,
      strategy,
      pruner,
      objective: { metric, mode },
      budget: Number(budget),
      parallelism: Number(parallelism),
      seed: Number(seed),
    };
    setBusy(true);
    setErrors(NO_ERRORS);
    try {
      const sweep = await sweepsApi.create(body);
      navigate(`/sweeps/${sweep.id}`);
    } catch (e) {
      if (e instanceof ApiError) {
        const mapped = mapSweepErrors(e.fields, rows, FORM_FIELDS, form.fields.map((f) => f.path));
        const placed = Object.keys(mapped.rows).length + Object.keys(mapped.form).length + Object.keys(mapped.config).length + mapped.graph.length + mapped.general.length;
        if (!placed) mapped.general.push(e.message);
        setErrors(mapped);
      } else setErrors({ ...NO_ERRORS, general: [(e as Error).message] });
      setBusy(false);
    }
  }

  const formErr = (field: string) => <FieldErrors messages={errors.form[field]} testid={`error-${field}`} />;

  return (
    <form
      className="panel new-sweep"
      data-testid="new-sweep-form"
      aria-labelledby={`${ids}-h`}
      onSubmit={(e) => {
        e.preventDefault();
        void create();
      }}
    >
      <h2 id={`${ids}-h`}>New sweep</h2>
      <div className="sweep-base">
        <div className="field">
          <label htmlFor={`${ids}-name`}>Name</label>
          <input id={`${ids}-name`} type="text" data-testid="sweep-name" value={name} onChange={(e) => setName(e.target.value)} />
          {formErr("name")}
        </div>
        <div className="field">
          <label htmlFor={`${ids}-graph`}>Graph</label>
          <select id={`${ids}-graph`} data-testid="sweep-graph" value={graphId} onChange={(e) => setGraphId(e.target.value)}>
            <option value="">{graphs === null ? "Loading…" : "Choose a graph"}</option>
            {graphs?.map((g) => (
              <option key={g.id} value={g.id}>
                {g.name}
              </option>
            ))}
          </select>
          {formErr("graph")}
        </div>
        <div className="field">
          <label htmlFor={`${ids}-rev`}>Revision</label>
          <select id={`${ids}-rev`} data-testid="sweep-revision" value={revision} disabled={!revisions.length} onChange={(e) => setRevision(e.target.value)}>
            {revisions.length === 0 && <option value="">–</option>}
            {[...revisions]
              .sort((a, b) => b.number - a.number)
              .map((r) => (
                <option key={r.number} value={r.number}>
                  {r.number}
                </option>
              ))}
          </select>
          {formErr("revision")}
          {formErr("graph_revision")}
        </div>
        <div className="field">
          <label htmlFor={`${ids}-dataset`}>Dataset</label>
          <select id={`${ids}-dataset`} data-testid="sweep-dataset" value={datasetId} onChange={(e) => setDatasetId(e.target.value)}>
            {datasets?.length === 0 && <option value="">No ready dataset</option>}
            {datasets?.map((d) => (
              <option key={d.id} value={d.id}>
                {d.name} ({d.kind})
              </option>
            ))}
          </select>
          {formErr("dataset")}
        </div>
      </div>
      {errors.graph.length > 0 && (
        <div className="error" role="alert" data-testid="sweep-graph-errors">
          <p>The graph does not fit:</p>
          <ul>
            {errors.graph.map((m) => (
              <li key={m}>{m}</li>
            ))}
          </ul>
        </div>
      )}

      <h3>Base training config</h3>
      {form ? (
        <ConfigFields
          form={form}
          values={values}
          errors={errors.config}
          prefix={ids}
          onChange={(path, v) => {
            setValues((old) => withValue(old, path, v));
            setErrors((old) => (old.config[path] ? { ...old, config: { ...old.config, [path]: [] } } : old));
          }}
        />
      ) : (
        <p className="muted">Loading the training settings…</p>
      )}

      <h3>Search space</h3>
      <datalist id={`${ids}-keys`}>
        {[...options.values()].map((o) => (
          <option key={o.key} value={o.key}>
            {o.label}
          </option>
        ))}
      </datalist>
      <ol className="plain space-rows" data-testid="space-rows">
        {rows.map((row, i) => (
          <SpaceRowView
            key={i}
            index={i}
            row={row}
            errors={errors.rows[i]}
            listId={`${ids}-keys`}
            options={options}
            onChange={(r) => {
              setRows((old) => old.map((x, j) => (j === i ? r : x)));
              setErrors((old) => (old.rows[i] ? { ...old, rows: { ...old.rows, [i]: {} } } : old));
            }}
            onRemove={() => {
              setRows((old) => old.filter((_, j) => j !== i));
              setErrors((old) => ({ ...old, rows: {} }));
            }}
          />
        ))}
      </ol>
      <button type="button" data-testid="space-add" onClick={() => setRows((old) => [...old, emptyRow()])}>
        + Add a dimension
      </button>
      {formErr("space")}

      <h3>Search</h3>
      <div className="sweep-search config-grid">
        <div className="field">
          <label htmlFor={`${ids}-strategy`}>Strategy</label>
          <select id={`${ids}-strategy`} data-testid="sweep-strategy" value={strategy} onChange={(e) => setStrategy(e.target.value as SweepStrategy)}>
            <option value="tpe">TPE (Bayesian)</option>
            <option value="random">random</option>
            <option value="grid">grid (every dimension discrete)</option>
          </select>
          {formErr("strategy")}
        </div>
        <div className="field">
          <label htmlFor={`${ids}-pruner`}>Pruner</label>
          <select id={`${ids}-pruner`} data-testid="sweep-pruner" value={pruner} onChange={(e) => setPruner(e.target.value as SweepPruner)}>
            <option value="median">median</option>
            <option value="successive_halving">successive halving</option>
            <option value="hyperband">Hyperband (successive halving in brackets)</option>
            <option value="none">none</option>
          </select>
          {formErr("pruner")}
        </div>
        <div className="field">
          <label htmlFor={`${ids}-metric`}>Objective</label>
          <select
            id={`${ids}-metric`}
            data-testid="sweep-objective-metric"
            value={metric}
            onChange={(e) => {
              setMetric(e.target.value);
              setMode(/loss|mae|rmse|mse/.test(e.target.value) ? "min" : "max");
            }}
          >
            {OBJECTIVES.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
          {formErr("objective")}
          {formErr("objective.metric")}
        </div>
        <div className="field">
          <label htmlFor={`${ids}-mode`}>Better is</label>
          <select id={`${ids}-mode`} data-testid="sweep-objective-mode" value={mode} onChange={(e) => setMode(e.target.value as "min" | "max")}>
            <option value="min">lower (min)</option>
            <option value="max">higher (max)</option>
          </select>
          {formErr("objective.mode")}
        </div>
        <div className="field">
          <label htmlFor={`${ids}-budget`}>Budget (trials)</label>
          <input id={`${ids}-budget`} type="text" inputMode="numeric" data-testid="sweep-budget" value={budget} onChange={(e) => setBudget(e.target.value)} />
          {formErr("budget")}
        </div>
        <div className="field">
          <label htmlFor={`${ids}-par`}>Trials at once</label>
          <input id={`${ids}-par`} type="text" inputMode="numeric" data-testid="sweep-parallelism" value={parallelism} onChange={(e) => setParallelism(e.target.value)} />
          {formErr("parallelism")}
        </div>
        <div className="field">
          <label htmlFor={`${ids}-seed`}>Seed</label>
          <input id={`${ids}-seed`} type="text" inputMode="numeric" data-testid="sweep-seed" value={seed} onChange={(e) => setSeed(e.target.value)} />
          {formErr("seed")}
        </div>
      </div>
      {errors.general.map((m) => (
        <p key={m} className="error" role="alert" data-testid="sweep-error">
          {m}
        </p>
      ))}
      <div className="row dialog-actions">
        <span className="spacer" />
        <button type="button" onClick={onCancel} data-testid="sweep-form-close">
          Close
        </button>
        <button type="submit" className="primary" data-testid="sweep-create" disabled={busy || !form}>
          {busy ? "Starting…" : "Start the sweep"}
        </button>
      </div>
    </form>
  );
}
