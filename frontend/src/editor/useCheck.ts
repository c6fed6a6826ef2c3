// Live checking: every content change goes to the server's validator, debounced, stale requests cancelled.
import { useEffect, useRef, useState } from "react";
import { api } from "../api/client";
import type { GraphSpec, ValidationError } from "../api/types";
import { type CheckState, EMPTY_CHECK } from "./context";

export const CHECK_DEBOUNCE_MS = 300;

export function groupErrors(errors: ValidationError[]): Map<string, ValidationError[]> {
  const by = new Map<string, ValidationError[]>();
  for (const e of errors) if (e.node) by.set(e.node, [...(by.get(e.node) ?? []), e]);
  return by;
}

/** Checks `spec` whenever `key` (its model part, canonical JSON) changes. */
export function useServerCheck(spec: GraphSpec, key: string): CheckState {
  const [state, setState] = useState<CheckState>(EMPTY_CHECK);
  const specRef = useRef(spec);
  specRef.current = spec;
  // The first check (opening a graph) has nothing to wait for; later ones wait for typing to pause.
  const first = useRef(true);

  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ ...s, pending: true }));
    const timer = window.setTimeout(async () => {
      try {
        const report = await api.validate(specRef.current, controller.signal);
        setState({ report, errorsByNode: groupErrors(report.errors), pending: false, failure: null });
      } catch (e) {
        if (controller.signal.aborted) return;
        setState((s) => ({ ...s, pending: false, failure: (e as Error).message }));
      }
    }, first.current ? 0 : CHECK_DEBOUNCE_MS);
    first.current = false;
    return () => {
      window.clearTimeout(timer);
      controller.abort();
    };
  }, [key]);

  return state;
}
