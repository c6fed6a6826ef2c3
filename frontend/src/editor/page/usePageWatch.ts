// What the page keeps doing while a graph is open: a light poll that tells when someone saves a
// newer revision.
import { type Dispatch, type RefObject, useEffect } from "react";
import { api } from "../../api/client";
import { newerThanOpen } from "../newerRevision";
import type { RevisionAction } from "./revisionState";

/** How often the open editor asks whether a teammate saved (only while the tab is visible). */
const POLL_MS = 5000;

/**
 * Asks every few seconds whether the latest revision moved past the open one (never while the tab
 * is hidden; at once when it shows again). `open` is read at each ask.
 */
export function useLatestPoll(graphId: number, active: boolean, open: RefObject<number | null>, dispatch: Dispatch<RevisionAction>): void {
  useEffect(() => {
    if (!active) return;
    let live = true;
    let busy = false;
    const tick = async () => {
      if (busy || document.visibilityState === "hidden") return;
      busy = true;
      try {
        const graph = await api.graphHead(graphId);
        if (!live) return;
        dispatch({ type: "latestSeen", newer: newerThanOpen(graph as typeof graph & { latest?: unknown }, open.current) });
      } catch {
        // A failed poll says nothing; the next one tries again.
      } finally {
        busy = false;
      }
    };
    const timer = window.setInterval(tick, POLL_MS);
    const onVisible = () => {
      if (document.visibilityState === "visible") void tick();
    };
    document.addEventListener("visibilitychange", onVisible);
    return () => {
      live = false;
      window.clearInterval(timer);
      document.removeEventListener("visibilitychange", onVisible);
    };
  }, [graphId, active, open, dispatch]);
}
