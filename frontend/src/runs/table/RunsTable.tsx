// The runs table: fixed columns, the configuration fields and graph parameters that differ among
// the listed runs, final and best metrics; a header asks the server to sort by it, a tick selects
// for Compare.
import { useMemo } from "react";
import { StatusBadge } from "../../datasets/StatusBadge";
import { BASE, navigate } from "../../router";
import { formatDuration, formatMetric } from "../format";
import { type Column, type RunRow, type Sort, type tableColumns, durationOf, finalValues, flattenConfig, formatConfigValue, runName } from "../runsTable";
import { ACTIVE_STATUSES } from "../types";

/** A column's header: a button that asks the server to sort by it, or its label where it cannot. */
function SortHeader({ column, sort, onSort, group }: { column: Column; sort: Sort; onSort: (key: string) => void; group?: string }) {
  const key = column.key;
  const active = key !== null && sort.column === key;
  // "test/accuracy" may break after the slash: a dozen metric columns fit the screen.
  const label = column.label.split("/").map((part, i) => (
    <span key={i}>
      {i > 0 && (
        <>
          /<wbr />
        </>
      )}
      {part}
    </span>
  ));
  return (
    <th scope="col" aria-sort={active ? (sort.direction === "asc" ? "ascending" : "descending") : undefined} className={group}>
      {key === null ? (
        label
      ) : (
        <button type="button" className="sort" data-testid={`sort-${column.id}`} title={`Sort by ${key}`} onClick={() => onSort(key)}>
          {label}
          <span aria-hidden className="sort-mark">
            {active ? (sort.direction === "asc" ? " ▲" : " ▼") : ""}
          </span>
        </button>
      )}
    </th>
  );
}

export interface RunsTableProps {
  rows: RunRow[];
  columns: ReturnType<typeof tableColumns>;
  sort: Sort;
  onSort: (key: string) => void;
  selected: ReadonlySet<number>;
  chosen: number[];
  onSelect: (s: ReadonlySet<number>) => void;
  onTag: (tag: string) => void;
}

/** A graph column's value for a run, as the revision holds it. */
function graphCell(column: Column, run: RunRow): unknown {
  return column.raw?.(run);
}

export function RunsTable({ rows, columns, sort, onSort, selected, chosen, onSelect, onTag }: RunsTableProps) {
  const flat = useMemo(() => new Map(rows.map((r) => [r.id, flattenConfig(r.config)])), [rows]);
  const col = (id: string) => columns.fixed.find((c) => c.id === id)!;
  function toggle(id: number, on: boolean) {
    const next = new Set(selected);
    if (on) next.add(id);
    else next.delete(id);
    onSelect(next);
  }
  return (
<div className="scroll-x">
      <table className="table runs-table" data-testid="run-list">
        <caption className="sr-only">Runs; click a column header to sort by it</caption>
        <thead>
          {(columns.config.length > 0 || columns.graph.length > 0 || columns.final.length > 0 || columns.best.length > 0) && (
            <tr className="col-groups">
              <td colSpan={8} />
              {columns.config.length > 0 && (
                <th scope="colgroup" colSpan={columns.config.length} className="group-config">
                  Config (differs)
                </th>
              )}
              {columns.graph.length > 0 && (
                <th scope="colgroup" colSpan={columns.graph.length} className="group-graph" data-testid="group-graph">
                  Graph (differs)
                </th>
              )}
              {columns.final.length > 0 && (
                <th scope="colgroup" colSpan={columns.final.length} className="group-metric">
                  Final
                </th>
              )}
              {columns.best.length > 0 && (
                <th scope="colgroup" colSpan={columns.best.length} className="group-metric">
                  Best
                </th>
              )}
            </tr>
          )}
          <tr>
            <th scope="col">
              <input
                type="checkbox"
                aria-label="Select every listed run"
                data-testid="select-all-runs"
                checked={rows.length > 0 && chosen.length === rows.length}
                onChange={(e) => onSelect(e.target.checked ? new Set(rows.map((r) => r.id)) : new Set())}
              />
            </th>
            {["name", "status", "who", "when", "duration", "graph", "dataset"].map((id) => (
              <SortHeader key={id} column={col(id)} sort={sort} onSort={onSort} />
            ))}
            {columns.config.map((c) => (
              <SortHeader key={c.id} column={c} sort={sort} onSort={onSort} group="group-config" />
            ))}
            {columns.graph.map((c) => (
              <SortHeader key={c.id} column={c} sort={sort} onSort={onSort} group="group-graph" />
            ))}
            {[...columns.final, ...columns.best].map((c) => (
              <SortHeader key={c.id} column={c} sort={sort} onSort={onSort} group="num" />
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => {
            const name = runName(r);
            const final = finalValues(r);
            return (
              <tr key={r.id} data-testid={`run-row-${r.id}`} className={selected.has(r.id) ? "selected" : undefined}>
                <td>
                  <input
                    type="checkbox"
                    data-testid={`select-run-${r.id}`}
                    aria-label={`Select ${name}`}
                    checked={selected.has(r.id)}
                    onChange={(e) => toggle(r.id, e.target.checked)}
                  />
                </td>
                <td className="run-name">
                  <a
                    href={`${BASE}/runs/${r.id}`}
                    data-testid="open-run"
                    onClick={(e) => {
                      e.preventDefault();
                      navigate(`/runs/${r.id}`);
                    }}
                  >
                    {name}
                  </a>
                  {r.name.trim() && <span className="muted small"> #{r.id}</span>}
                  {r.tags.length > 0 && (
                    <ul className="chips" aria-label="Tags">
                      {r.tags.map((t) => (
                        <li key={t} className="chip">
                          <button type="button" className="chip-filter" title={`Only runs tagged ${t}`} onClick={() => onTag(t)}>
                            {t}
                          </button>
                        </li>
                      ))}
                    </ul>
                  )}
                </td>
                <td>
                  <StatusBadge status={r.status} testid="run-status" />
                  {ACTIVE_STATUSES.has(r.status) && (
                    <progress
                      className="row-progress"
                      max={1}
                      value={r.progress.fraction ?? 0}
                      aria-label={`Progress of ${name}`}
                    />
                  )}
                  {r.status === "pruned" && r.error && <div className="muted small">{r.error}</div>}
                </td>
                <td className="small">{r.created_by ?? ""}</td>
                <td className="small nowrap" title={new Date(r.created_at).toLocaleString()}>
                  {new Date(r.created_at).toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" })}
                </td>
                <td className="small nowrap">{formatDuration(durationOf(r))}</td>
                <td className="small">
                  {r.graph_name} <span className="muted">rev {r.revision}</span>
                </td>
                <td className="small">{r.dataset_name}</td>
                {columns.config.map((c) => (
                  <td key={c.id} className="small group-config" data-testid={`cell-${c.id}`}>
                    {formatConfigValue(flat.get(r.id)?.[c.label])}
                  </td>
                ))}
                {columns.graph.map((c) => (
                  <td key={c.id} className="small group-graph" data-testid={`cell-${c.id}`}>
                    {formatConfigValue(graphCell(c, r))}
                  </td>
                ))}
                {columns.final.map((c) => (
                  <td key={c.id} className="small num">
                    {formatMetric(final[c.label])}
                  </td>
                ))}
                {columns.best.map((c) => {
                  const best = r.summary?.best?.[c.label];
                  return (
                    <td key={c.id} className="small num" title={best ? `step ${best.step}, epoch ${best.epoch}` : undefined}>
                      {formatMetric(best?.value)}
                    </td>
                  );
                })}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
