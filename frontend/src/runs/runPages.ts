// The runs table's rows, fetched page by page as the viewport reaches them (pure; tested in
// vitest). One store per query (filters + ordering): it asks for the pages that hold the rows in
// view, keeps at most `maxPages` of them (the least recently seen go first, never one in view),
// and tells its subscribers when a page or the count arrives. The server answers pages of
// `pageSize` with the exact `count` of the filter.
import type { Page } from "../api/types";

export interface RunPageStoreOptions {
  /** Rows per page (the list's page_size). */
  pageSize?: number;
  /** Pages kept at most (tens of thousands of runs never live in memory at once). */
  maxPages?: number;
}

/** The 1-based pages that hold rows `first`..`last` (0-based, inclusive). */
export function pagesFor(first: number, last: number, pageSize: number): number[] {
  if (last < first || last < 0) return [];
  const out: number[] = [];
  for (let p = Math.floor(Math.max(0, first) / pageSize) + 1; p <= Math.floor(last / pageSize) + 1; p++) out.push(p);
  return out;
}

export class RunPageStore<Row> {
  readonly pageSize: number;
  readonly maxPages: number;
  /** The filter's count, once a page has answered. */
  count: number | null = null;
  /** What the last failed fetch threw (cleared by the next good answer). */
  error: unknown = null;
  /** Bumped on every change (for useSyncExternalStore). */
  version = 0;
  private pages = new Map<number, Row[]>();
  private loading = new Set<number>();
  private listeners = new Set<() => void>();
  private closed = false;

  constructor(
    private readonly fetchPage: (page: number) => Promise<Page<Row>>,
    { pageSize = 100, maxPages = 30 }: RunPageStoreOptions = {},
  ) {
    this.pageSize = pageSize;
    this.maxPages = Math.max(1, maxPages);
  }

  /** The row at `index` (0-based), or undefined while its page is not here. */
  rowAt(index: number): Row | undefined {
    return this.pages.get(Math.floor(index / this.pageSize) + 1)?.[index % this.pageSize];
  }

  /** The rows from the first up to the first missing one (what "compare the top N" can take as is). */
  leading(n: number): Row[] {
    const out: Row[] = [];
    for (let i = 0; i < n; i++) {
      const row = this.rowAt(i);
      if (row === undefined) break;
      out.push(row);
    }
    return out;
  }

  /** The pages held now, in page order (for tests and polling). */
  heldPages(): number[] {
    return [...this.pages.keys()].sort((a, b) => a - b);
  }

  /** The rows of the pages held, in the list's order. */
  heldRows(): Row[] {
    return this.heldPages().flatMap((p) => this.pages.get(p) ?? []);
  }

  /** The rows loaded among `first`..`last`. */
  loadedIn(first: number, last: number): Row[] {
    const out: Row[] = [];
    for (let i = Math.max(0, first); i <= last; i++) {
      const row = this.rowAt(i);
      if (row !== undefined) out.push(row);
    }
    return out;
  }

  /**
   * Rows `first`..`last` are in view: fetch the pages of them not here yet (one request each,
   * none twice at once) and keep them as the most recently seen. Resolves once those arrived.
   */
  async ensure(first: number, last: number): Promise<void> {
    const wanted = pagesFor(first, this.count === null ? last : Math.min(last, this.count - 1), this.pageSize);
    for (const p of wanted) this.touch(p);
    const missing = wanted.filter((p) => !this.pages.has(p) && !this.loading.has(p));
    await Promise.all(missing.map((p) => this.load(p, wanted)));
  }

  /** Fetch again the pages of rows `first`..`last` that are here (a listed run is still going). */
  async refresh(first: number, last: number): Promise<void> {
    const wanted = pagesFor(first, last, this.pageSize).filter((p) => this.pages.has(p) && !this.loading.has(p));
    await Promise.all(wanted.map((p) => this.load(p, wanted)));
  }

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  getVersion = (): number => this.version;

  /** No more fetching or telling (the query changed: a new store took over). */
  close(): void {
    this.closed = true;
    this.listeners.clear();
  }

  private touch(page: number): void {
    const rows = this.pages.get(page);
    if (rows === undefined) return;
    this.pages.delete(page); // a Map keeps insertion order: re-inserting makes it the newest
    this.pages.set(page, rows);
  }

  private async load(page: number, inView: readonly number[]): Promise<void> {
    this.loading.add(page);
    try {
      const answer = await this.fetchPage(page);
      if (this.closed) return;
      this.pages.delete(page);
      this.pages.set(page, answer.results);
      this.count = answer.count;
      this.error = null;
      this.evict(inView);
    } catch (e) {
      if (this.closed) return;
      this.error = e;
    } finally {
      this.loading.delete(page);
    }
    this.changed();
  }

  private evict(inView: readonly number[]): void {
    const keep = new Set(inView);
    for (const page of this.pages.keys()) {
      if (this.pages.size <= this.maxPages) break;
      if (!keep.has(page)) this.pages.delete(page);
    }
  }

  private changed(): void {
    this.version += 1;
    for (const listener of this.listeners) listener();
  }
}
