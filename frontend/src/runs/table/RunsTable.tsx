// The runs table, virtualised (@tanstack/react-virtual): every run of the filter has a place in
// the scroll, only the rows in view (and a few around) are in the DOM, their pages fetched as the
// view reaches them (runPages.ts). Fixed columns, the chosen configuration fields, graph
// parameters, final and best metrics; the header stays on top; a header asks the server to sort
// by it, a tick selects for Compare (ticks are ids: they stay while their rows scroll away).
// Keys: arrows, Page Up/Down, Home/End move between rows (the focus goes to the row's tick),
// Space ticks, Enter opens.
import { useVirtualizer } from "@tanstack/react-virtual";
import { type KeyboardEvent, useEffect, useLayoutEffect, useRef, useState } from "react";
import type { RunPageStore } from "../runPages";
import { StatusBadge } from "../../datasets/StatusBadge";
import { BASE, navigate } from "../../router";
import { formatDuration, formatMetric } from "../format";
import { type Column, type RunRow, type Sort, type TableColumns, durationOf, finalValues, flattenConfig, formatConfigValue, runName } from "../runsTable";
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

/** A row's height before it is measured (one line of text and a badge). */
export const ROW_ESTIMATE = 37;

/** The height the scroll box is assumed to have before it is laid out (and in tests). */
export const VIEW_ESTIMATE = 640;

/** Rows drawn beyond each edge of the view. */
export const OVERSCAN = 8;

export interface RunsTableProps {
  store: RunPageStore<RunRow>;
  count: number;
  columns: TableColumns;
  sort: Sort;
  onSort: (key: string) => void;
  selected: ReadonlySet<number>;
  onSelect: (s: ReadonlySet<number>) => void;
  onTag: (tag: string) => void;
  /** Rows first..last are drawn (their pages are wanted). */
  onView: (first: number, last: number) => void;
  /** The columns are those that differ among the loaded runs (not picked): the groups say so. */
  automatic?: boolean;
}

const FIXED_IDS = ["name", "status", "who", "when", "duration", "graph", "dataset"];

export function RunsTable({ store, count, columns, sort, onSort, selected, onSelect, onTag, onView, automatic = false }: RunsTableProps) {
  const differs = automatic ? " (differs)" : "";
  const scrollRef = useRef<HTMLDivElement>(null);
  const headRef = useRef<HTMLTableSectionElement>(null);
  const [headHeight, setHeadHeight] = useState(0);
  const [active, setActive] = useState<number | null>(null);
  const focusActive = useRef(false);
  const col = (id: string) => columns.fixed.find((c) => c.id === id)!;
  const span = 1 + FIXED_IDS.length + columns.config.length + columns.graph.length + columns.final.length + columns.best.length;

  // Another filter or order starts at its first run; the row the keys had reached means nothing there.
  useEffect(() => {
    setActive(null);
    scrollRef.current?.scrollTo({ top: 0 });
  }, [store]);

  useLayoutEffect(() => {
    const h = headRef.current?.offsetHeight ?? 0;
    if (h !== headHeight) setHeadHeight(h);
  });

  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_ESTIMATE,
    overscan: OVERSCAN,
    scrollMargin: headHeight,
    initialRect: { width: 1200, height: VIEW_ESTIMATE },
  });
  const items = virtualizer.getVirtualItems();
  const first = items[0]?.index ?? 0;
  const last = items[items.length - 1]?.index ?? -1;
  useEffect(() => {
    if (last >= first) onView(first, last);
    // onView is a new function each render; the range is what matters.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [first, last, store]);

  // After a key moved the active row, its tick takes the focus once it is drawn.
  useEffect(() => {
    if (!focusActive.current || active === null) return;
    const tick = scrollRef.current?.querySelector<HTMLInputElement>(`tr[data-index="${active}"] input[type=checkbox]`);
    if (tick) {
      tick.focus({ preventScroll: true });
      focusActive.current = false;
    }
  });

  function toggle(id: number, on: boolean) {
    const next = new Set(selected);
    if (on) next.add(id);
    else next.delete(id);
    onSelect(next);
  }

  function onKey(e: KeyboardEvent<HTMLDivElement>) {
    const target = e.target as HTMLElement;
    if (target.closest("thead") || (target instanceof HTMLInputElement && target.type !== "checkbox")) return;
    const rowEl = target.closest<HTMLElement>("tr[data-index]");
    const here = rowEl ? Number(rowEl.dataset.index) : (active ?? -1);
    const page = Math.max(1, Math.floor((scrollRef.current?.clientHeight ?? VIEW_ESTIMATE) / ROW_ESTIMATE) - 1);
    const moves: Record<string, number> = {
      ArrowDown: here + 1,
      ArrowUp: here - 1,
      PageDown: here + page,
      PageUp: here - page,
      Home: 0,
      End: count - 1,
    };
    if (e.key in moves) {
      e.preventDefault();
      const next = Math.max(0, Math.min(count - 1, moves[e.key]));
      setActive(next);
      focusActive.current = true;
      virtualizer.scrollToIndex(next, { align: "auto" });
    } else if (e.key === "Enter" && rowEl && target instanceof HTMLInputElement) {
      const run = store.rowAt(here);
      if (run) navigate(`/runs/${run.id}`);
    }
  }

  // Spacer rows stand for the rows above and below the drawn ones, so the table is as tall as all
  // of them and its header can stick to the top of the scroll box (none while every row is drawn).
  const top = Math.max(0, (items[0]?.start ?? headHeight) - headHeight);
  const bottom = Math.max(0, virtualizer.getTotalSize() - ((items[items.length - 1]?.end ?? headHeight) - headHeight));
  const inView = store.loadedIn(first, last);
  const allInView = inView.length > 0 && inView.every((r) => selected.has(r.id));
  return (
    <div
      className="runs-scroll"
      ref={scrollRef}
      data-testid="runs-scroll"
      role="region"
      aria-label={`Runs, ${count} in all; arrow keys move between rows`}
      tabIndex={0}
      onKeyDown={onKey}
    >
        <table className="table runs-table" data-testid="run-list" aria-rowcount={count + 1}>
          <caption className="sr-only">Runs; click a column header to sort by it</caption>
          <thead ref={headRef}>
            {(columns.config.length > 0 || columns.graph.length > 0 || columns.final.length > 0 || columns.best.length > 0) && (
              <tr className="col-groups">
                <td colSpan={8} />
                {columns.config.length > 0 && (
                  <th scope="colgroup" colSpan={columns.config.length} className="group-config">
                    Config{differs}
                  </th>
                )}
                {columns.graph.length > 0 && (
                  <th scope="colgroup" colSpan={columns.graph.length} className="group-graph" data-testid="group-graph">
                    Graph{differs}
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
                  aria-label={selected.size > 0 ? "Clear the selection" : "Select the runs in view"}
                  data-testid="select-all-runs"
                  checked={allInView}
                  onChange={(e) => onSelect(e.target.checked ? new Set([...selected, ...inView.map((r) => r.id)]) : new Set())}
                />
              </th>
              {FIXED_IDS.map((id) => (
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
            {top > 0 && <Spacer height={top} span={span} />}
            {items.map((item) => {
              const r = store.rowAt(item.index);
              if (!r)
                return (
                  <tr key={`wait-${item.index}`} data-index={item.index} ref={virtualizer.measureElement} className="run-row-waiting" aria-rowindex={item.index + 2}>
                    <td colSpan={span} className="muted small">
                      Loading run {item.index + 1}…
                    </td>
                  </tr>
                );
              return (
                <RunRowView
                  key={r.id}
                  index={item.index}
                  measure={virtualizer.measureElement}
                  run={r}
                  columns={columns}
                  selected={selected.has(r.id)}
                  active={active === item.index}
                  onToggle={toggle}
                  onTag={onTag}
                />
              );
            })}
            {bottom > 0 && <Spacer height={bottom} span={span} />}
          </tbody>
        </table>
    </div>
  );
}

function Spacer({ height, span }: { height: number; span: number }) {
  return (
    <tr className="runs-spacer" aria-hidden style={{ height }}>
      <td colSpan={span} />
    </tr>
  );
}

interface RunRowViewProps {
  index: number;
  measure: (el: Element | null) => void;
  run: RunRow;
  columns: TableColumns;
  selected: boolean;
  active: boolean;
  onToggle: (id: number, on: boolean) => void;
  onTag: (tag: string) => void;
}

function RunRowView({ index, measure, run: r, columns, selected, active, onToggle, onTag }: RunRowViewProps) {
  const name = runName(r);
  const final = finalValues(r);
  const flat = flattenConfig(r.config);
  const classes = [selected ? "selected" : "", active ? "active" : ""].filter(Boolean).join(" ");
  return (
    <tr data-testid={`run-row-${r.id}`} data-index={index} ref={measure} aria-rowindex={index + 2} className={classes || undefined}>
      <td>
        <input
          type="checkbox"
          data-testid={`select-run-${r.id}`}
          aria-label={`Select ${name}`}
          checked={selected}
          onChange={(e) => onToggle(r.id, e.target.checked)}
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
          <progress className="row-progress" max={1} value={r.progress.fraction ?? 0} aria-label={`Progress of ${name}`} />
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
          {formatConfigValue(flat[c.label])}
        </td>
      ))}
      {columns.graph.map((c) => (
        <td key={c.id} className="small group-graph" data-testid={`cell-${c.id}`}>
          {formatConfigValue(c.raw?.(r))}
        </td>
      ))}
      {columns.final.map((c) => (
        <td key={c.id} className="small num">
          {formatMetric(final[c.label])}
        </td>
      ))}
      {columns.best.map((c) => {
        const best = r.summary?.best?.[c.label];
        const value = best?.value ?? (r.best_checkpoint?.metrics as Record<string, unknown> | undefined)?.[c.label];
        return (
          <td key={c.id} className="small num" title={best ? `step ${best.step}, epoch ${best.epoch}` : undefined}>
            {formatMetric(value)}
          </td>
        );
      })}
    </tr>
  );
}
