// A run's explanations as the explain panel keeps them: the list (newest first), which are shown,
// each fetched again when the stream says it is done, and a slow poll while a shown one is pending.
import { useCallback, useEffect, useState } from "react";
import { runsApi } from "./api";
import type { Explanation, ExplanationEvent } from "./types";

const FALLBACK_POLL_MS = 5000;

export function useExplanations(runId: number, subscribe: (listener: (event: ExplanationEvent) => void) => () => void) {
  const [history, setHistory] = useState<Explanation[]>([]);
  const [shownIds, setShownIds] = useState<number[]>([]);

  useEffect(() => {
    runsApi.explanations(runId).then(
      (list) => {
        setHistory(list);
        setShownIds((s) =>
          s.length
            ? s
            : list
                .filter((e) => e.status === "succeeded")
                .slice(0, 1)
                .map((e) => e.id),
        );
      },
      () => undefined,
    );
  }, [runId]);

  const refresh = useCallback(async (id: number) => {
    const e = await runsApi.explanation(id);
    setHistory((h) => (h.some((x) => x.id === id) ? h.map((x) => (x.id === id ? e : x)) : [e, ...h]));
    return e;
  }, []);

  // The stream says when an explanation is done; fetch its result then.
  useEffect(
    () =>
      subscribe((event) => {
        if (event.status === "succeeded" || event.status === "failed") void refresh(event.id).catch(() => undefined);
      }),
    [subscribe, refresh],
  );

  const shown = shownIds.map((id) => history.find((e) => e.id === id)).filter((e): e is Explanation => !!e);

  // A belt to the stream's braces: look now and then while one is pending.
  const pendingKey = shown
    .filter((e) => e.status === "queued" || e.status === "running")
    .map((e) => e.id)
    .join(",");
  useEffect(() => {
    if (!pendingKey) return;
    const timer = window.setInterval(() => {
      for (const id of pendingKey.split(",")) void refresh(Number(id)).catch(() => undefined);
    }, FALLBACK_POLL_MS);
    return () => window.clearInterval(timer);
  }, [pendingKey, refresh]);

  /** New explanations asked for: first in the list, and the ones shown. */
  const add = useCallback((created: Explanation[]) => {
    setHistory((h) => [...created.slice().reverse(), ...h]);
    setShownIds(created.map((e) => e.id));
  }, []);

  return { history, shown, setShownIds, add };
}
