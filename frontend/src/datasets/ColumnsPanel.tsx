// A ready CSV's columns: include or leave out each feature, and choose what fills its empty cells.
// The server checks the stored file again with the new options (PATCH), so a choice that does not
// fit (mean of a text column, a refused gap) comes back as the engine's sentence.
import { useMemo, useState } from "react";
import { ApiError, apiRequest } from "../api/client";
import type { Dataset } from "../runs/types";
import {
  chosenFeatures,
  columnFacts,
  describeStrategy,
  formatFill,
  optionsOf,
  optionsPatch,
  STRATEGY_LABELS,
  strategiesFor,
  type MissingRuleOption,
} from "./columnOptions";

export function ColumnsPanel({ dataset, canEdit, onChanged }: { dataset: Dataset; canEdit: boolean; onChanged: () => void }) {
  const facts = useMemo(() => columnFacts(dataset), [dataset]);
  const [included, setIncluded] = useState<Set<string>>(() => new Set(chosenFeatures(dataset)));
  const [rules, setRules] = useState<Record<string, MissingRuleOption>>({});
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const chosen = optionsOf(dataset).target;
  const target = typeof chosen === "string" ? chosen : null;
  const csv = (dataset.summary as Record<string, unknown> | undefined)?.csv as
    | { encoding?: string; encoding_detected?: boolean; delimiter?: string }
    | undefined;
  const before = new Set(chosenFeatures(dataset));
  const changed = Object.keys(rules).length > 0 || included.size !== before.size || [...included].some((n) => !before.has(n));

  async function apply() {
    setBusy(true);
    setError(null);
    try {
      await apiRequest("PATCH", `/api/datasets/${dataset.id}/`, { options: optionsPatch(dataset, included, rules) });
      setRules({});
      onChanged();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  }

  function setRule(name: string, patch: Partial<MissingRuleOption>, current: MissingRuleOption) {
    setRules((r) => ({ ...r, [name]: { ...current, ...r[name], ...patch } }));
  }

  return (
    <section className="columns-panel" data-testid="columns-panel" aria-label={`Columns of ${dataset.name}`}>
      <h3>Columns and missing values</h3>
      {csv && (
        <p className="muted small" data-testid="csv-format">
          Read as {csv.encoding?.toUpperCase()}
          {csv.encoding_detected ? " (detected)" : ""}, separated by {csv.delimiter === "\t" ? "tabs" : `"${csv.delimiter}"`}.
        </p>
      )}
      <div className="scroll-x">
        <table className="table small">
          <thead>
            <tr>
              <th>Feature</th>
              <th>Column</th>
              <th>Kind</th>
              <th>Missing</th>
              <th>Empty cells</th>
            </tr>
          </thead>
          <tbody>
            {facts.map((c) => {
              const isTarget = c.name === target;
              const rule = rules[c.name] ?? { strategy: c.strategy, indicator: c.indicator };
              return (
                <tr key={c.name} data-testid={`column-${c.name}`} data-strategy={rule.strategy}>
                  <td>
                    {isTarget ? (
                      <span className="muted">target</span>
                    ) : (
                      <input
                        type="checkbox"
                        aria-label={`Use ${c.name} as a feature`}
                        data-testid={`feature-${c.name}`}
                        checked={included.has(c.name)}
                        disabled={!canEdit || busy || !target}
                        onChange={(e) => {
                          const next = new Set(included);
                          if (e.target.checked) next.add(c.name);
                          else next.delete(c.name);
                          setIncluded(next);
                        }}
                      />
                    )}
                  </td>
                  <td>
                    {c.name}
                    {c.idLike && (
                      <div className="warn small" data-testid={`id-like-${c.name}`}>
                        a different value in every row: likely an identifier, not a feature
                      </div>
                    )}
                  </td>
                  <td>{c.kind}</td>
                  <td data-testid={`missing-${c.name}`}>{c.missing}</td>
                  <td>
                    {canEdit && target ? (
                      <span className="row">
                        <select
                          aria-label={`Empty cells of ${c.name}`}
                          data-testid={`strategy-${c.name}`}
                          value={rule.strategy}
                          disabled={busy}
                          onChange={(e) => setRule(c.name, { strategy: e.target.value, value: undefined }, rule)}
                        >
                          {strategiesFor({ kind: c.kind, role: isTarget ? "target" : c.role }).map((s) => (
                            <option key={s} value={s}>
                              {STRATEGY_LABELS[s] ?? s}
                            </option>
                          ))}
                        </select>
                        {rule.strategy === "constant" && (
                          <input
                            aria-label={`Constant for ${c.name}`}
                            size={8}
                            value={rule.value === undefined ? "" : String(rule.value)}
                            onChange={(e) => {
                              const text = e.target.value;
                              const value = c.kind === "numeric" && text.trim() !== "" && !Number.isNaN(Number(text)) ? Number(text) : text;
                              setRule(c.name, { value }, rule);
                            }}
                          />
                        )}
                        {!isTarget && (
                          <label className="small">
                            <input
                              type="checkbox"
                              checked={rule.indicator === true}
                              onChange={(e) => setRule(c.name, { indicator: e.target.checked }, rule)}
                            />{" "}
                            was-missing column
                          </label>
                        )}
                        {formatFill(c) !== null && !rules[c.name] && (
                          <span className="muted" data-testid={`fill-${c.name}`}>
                            fitted on the training rows: {formatFill(c)}
                          </span>
                        )}
                      </span>
                    ) : (
                      <span data-testid={`strategy-text-${c.name}`}>{describeStrategy(c)}</span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {canEdit && target && (
        <p className="row">
          <button type="button" className="primary" data-testid="columns-apply" disabled={!changed || busy || included.size === 0} onClick={() => void apply()}>
            {busy ? "Checking…" : "Apply"}
          </button>
          <span className="help">Fills are learned from the training rows only and stored with each run.</span>
        </p>
      )}
      {error && (
        <div className="error" role="alert" data-testid="columns-error">
          {error}
        </div>
      )}
    </section>
  );
}
