import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { Page } from "../../api/types";
import { RunPageStore } from "../runPages";
import { DEFAULT_SORT, type RunRow, columnsOfKeys } from "../runsTable";
import { ColumnPicker } from "./ColumnPicker";
import { FilterBox } from "./FilterBox";
import { OVERSCAN, ROW_ESTIMATE, RunsTable, VIEW_ESTIMATE } from "./RunsTable";

function run(id: number): RunRow {
  return {
    id,
    name: `run ${id}`,
    status: "succeeded",
    tags: [],
    config: { optimizer: { lr: id / 1000 } },
    final_metrics: { "val/accuracy": id / 50_000 },
    summary: { final: { "val/accuracy": id / 50_000 }, best: {} },
    best_checkpoint: null,
    graph_params: { "nodes.fc1.out_features": 16 },
    progress: { fraction: 1 },
    created_at: "2026-01-01T00:00:00Z",
    started_at: "2026-01-01T00:00:00Z",
    finished_at: "2026-01-01T00:01:00Z",
    duration_s: 60,
    graph: 1,
    revision: 1,
    graph_name: "mlp",
    dataset_name: "iris",
    created_by: "ada",
  } as unknown as RunRow;
}

async function storeOf(count: number) {
  const asked: number[] = [];
  const store = new RunPageStore<RunRow>(async (page): Promise<Page<RunRow>> => {
    asked.push(page);
    const start = (page - 1) * 100;
    return { count, next: null, previous: null, results: Array.from({ length: Math.min(100, count - start) }, (_, i) => run(start + i + 1)) };
  });
  await store.ensure(0, 99);
  return { store, asked };
}

const columns = columnsOfKeys(["config.optimizer.lr", "nodes.fc1.out_features", "metrics.val/accuracy"]);

function table(store: RunPageStore<RunRow>, count: number, selected: ReadonlySet<number> = new Set()) {
  const seen: [number, number][] = [];
  const html = renderToStaticMarkup(
    <RunsTable
      store={store}
      count={count}
      columns={columns}
      sort={DEFAULT_SORT}
      onSort={() => {}}
      selected={selected}
      onSelect={() => {}}
      onTag={() => {}}
      onView={(a, b) => seen.push([a, b])}
    />,
  );
  return { html, seen };
}

describe("the virtualised runs table", () => {
  it("draws only the rows in view of fifty thousand, with the chosen columns and a header", async () => {
    const { store } = await storeOf(50_000);
    const { html } = table(store, 50_000, new Set([2]));
    const rows = html.match(/data-testid="run-row-\d+"/g) ?? [];
    const inView = Math.ceil(VIEW_ESTIMATE / ROW_ESTIMATE);
    expect(rows.length).toBeGreaterThanOrEqual(inView);
    expect(rows.length).toBeLessThanOrEqual(inView + 2 * OVERSCAN);
    expect(rows[0]).toBe('data-testid="run-row-1"');
    expect(html).toContain('aria-rowcount="50001"');
    // A spacer below stands for the rest: the scroll holds every run.
    expect(html).toMatch(new RegExp(`class="runs-spacer" aria-hidden="true" style="height:${(50_000 - rows.length) * ROW_ESTIMATE}px"`));
    expect(html).toContain('data-testid="sort-config:optimizer.lr"');
    expect(html).toContain('data-testid="cell-graph:nodes.fc1.out_features"');
    expect(html).toMatch(/data-testid="run-row-2" [^>]*class="selected"/);
  });

  it("shows a waiting row where a page has not come yet", async () => {
    const store = new RunPageStore<RunRow>(() => new Promise(() => {}));
    const { html } = table(store, 500);
    expect(html).toContain("Loading run 1…");
    expect(html).not.toContain(`data-testid="run-row-`);
  });
});

describe("the column picker", () => {
  it("offers the server's names by group, ticks the shown ones, narrows nothing at first", () => {
    const groups = [
      { id: "final" as const, title: "Final metrics", keys: ["metrics.val/accuracy"] },
      { id: "config" as const, title: "Config", keys: ["config.optimizer.lr", "config.epochs"] },
    ];
    const html = renderToStaticMarkup(<ColumnPicker groups={groups} shown={["config.epochs"]} automatic={false} onChange={() => {}} onAutomatic={() => {}} open />);
    expect(html).toContain("Columns (1)");
    expect(html).toMatch(/data-testid="column-config.epochs" checked=""/);
    expect(html).not.toMatch(/data-testid="column-config.optimizer.lr" checked/);
    expect(html).toContain("<legend>Final metrics</legend>");
    expect(renderToStaticMarkup(<ColumnPicker groups={[]} shown={[]} automatic onChange={() => {}} onAutomatic={() => {}} open />)).toContain(
      "The runs have no metrics or config yet.",
    );
  });
});

describe("the filter box", () => {
  it("offers the server's field names and then the operators", () => {
    const fields = ["metrics.val/accuracy", "config.optimizer.lr", "status"];
    const box = (text: string) =>
      renderToStaticMarkup(<FilterBox text={text} applied="" fields={fields} error={null} onText={() => {}} onApply={() => {}} />);
    expect(box("config.")).toContain('value="config.optimizer.lr"');
    expect(box("metrics.val/accuracy ")).toContain('value="metrics.val/accuracy &gt; "');
  });

  it("puts a caret under the column the server names", () => {
    const html = renderToStaticMarkup(
      <FilterBox text="a >" applied="a >" fields={[]} error={{ message: "ends too early (column 4)", column: 4 }} onText={() => {}} onApply={() => {}} />,
    );
    expect(html).toContain("a &gt;\n   ^");
    expect(html).toContain('aria-invalid="true"');
  });
});
