import { describe, expect, it } from "vitest";
import type { Page } from "../api/types";
import { RunPageStore, pagesFor } from "./runPages";

/** A server of `count` rows (row i is i), answering pages of `size` and noting what was asked. */
function server(count: number, size = 100) {
  const asked: number[] = [];
  const fetchPage = async (page: number): Promise<Page<number>> => {
    asked.push(page);
    const start = (page - 1) * size;
    return { count, next: null, previous: null, results: Array.from({ length: Math.max(0, Math.min(size, count - start)) }, (_, i) => start + i) };
  };
  return { asked, fetchPage };
}

describe("the pages of the runs table", () => {
  it("names the pages that hold a range of rows", () => {
    expect(pagesFor(0, 99, 100)).toEqual([1]);
    expect(pagesFor(95, 130, 100)).toEqual([1, 2]);
    expect(pagesFor(250, 250, 100)).toEqual([3]);
    expect(pagesFor(5, 4, 100)).toEqual([]);
  });

  it("fetches the pages as the view scrolls down, each once, and learns the count", async () => {
    const { asked, fetchPage } = server(50_000);
    const store = new RunPageStore(fetchPage, { pageSize: 100, maxPages: 5 });
    await store.ensure(0, 30);
    expect(store.count).toBe(50_000);
    expect(store.rowAt(30)).toBe(30);
    expect(store.rowAt(130)).toBeUndefined();
    await store.ensure(80, 130); // the view reaches the second page
    expect(asked).toEqual([1, 2]);
    expect(store.rowAt(130)).toBe(130);
    await Promise.all([store.ensure(49_980, 49_999), store.ensure(49_990, 49_999)]); // End, twice at once
    expect(asked).toEqual([1, 2, 500]);
    expect(store.rowAt(49_999)).toBe(49_999);
    expect(store.leading(150)).toHaveLength(150);
    expect(store.heldRows().slice(-2)).toEqual([49_998, 49_999]);
  });

  it("keeps at most maxPages, dropping the least recently seen and never one in view", async () => {
    const { asked, fetchPage } = server(10_000);
    const store = new RunPageStore(fetchPage, { pageSize: 100, maxPages: 3 });
    for (let page = 1; page <= 10; page++) await store.ensure((page - 1) * 100, (page - 1) * 100 + 20);
    expect(store.heldPages()).toEqual([8, 9, 10]);
    await store.ensure(0, 10); // back to the top: fetched again
    expect(asked.at(-1)).toBe(1);
    expect(store.heldPages()).toEqual([1, 9, 10]);
    await store.ensure(850, 1050); // a view over three pages keeps them all
    expect(store.heldPages()).toEqual([9, 10, 11]);
  });

  it("does not ask past the last row once the count is known", async () => {
    const { asked, fetchPage } = server(120);
    const store = new RunPageStore(fetchPage, { pageSize: 100 });
    await store.ensure(0, 99);
    await store.ensure(100, 400);
    expect(asked).toEqual([1, 2]);
    expect(store.rowAt(119)).toBe(119);
  });

  it("tells its subscribers, keeps the error of a failed page, and is silent once closed", async () => {
    let fail = true;
    const store = new RunPageStore<number>(async (page) => {
      if (fail) throw new Error("down");
      return { count: 1, next: null, previous: null, results: [page] };
    });
    let told = 0;
    store.subscribe(() => told++);
    await store.ensure(0, 0);
    expect((store.error as Error).message).toBe("down");
    fail = false;
    await store.ensure(0, 0);
    expect(store.error).toBeNull();
    expect(told).toBe(2);
    store.close();
    await store.refresh(0, 0);
    expect(told).toBe(2);
  });
});
