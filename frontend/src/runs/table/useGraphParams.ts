// The graph revisions of the listed runs, fetched once each (GET /api/graphs/<id>/revisions/<n>/)
// and flattened into `nodes.<id>.<param>` keys, so the runs table can show the parameters that differ.
import { useEffect, useState } from "react";
import { api } from "../../api/client";
import { type GraphParams, type RunRow, distinctRevisions, flattenGraph, revisionKey } from "../runsTable";

/** More distinct revisions than this are not fetched for one table (their columns would not fit anyway). */
const MAX_REVISIONS = 40;

export function useGraphParams(runs: readonly RunRow[] | null): GraphParams {
  const [params, setParams] = useState<GraphParams>(new Map());
  const wanted = distinctRevisions(runs ?? []).slice(0, MAX_REVISIONS);
  const key = wanted.map(revisionKey).sort().join(",");
  useEffect(() => {
    let live = true;
    const missing = wanted.filter((w) => !params.has(revisionKey(w)));
    if (missing.length === 0) return;
    Promise.all(
      missing.map((w) =>
        api.revision(w.graph, w.revision).then(
          (rev) => [revisionKey(w), flattenGraph(rev.spec)] as const,
          () => null,
        ),
      ),
    ).then((found) => {
      if (!live) return;
      setParams((old) => {
        const next = new Map(old);
        for (const f of found) if (f) next.set(f[0], f[1]);
        return next;
      });
    });
    return () => {
      live = false;
    };
    // Fetched again only when the set of revisions changes.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  return params;
}
