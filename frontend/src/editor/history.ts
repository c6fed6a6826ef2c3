// Undo/redo as plain data: every change is a new present; typing into one field coalesces.
export interface History<T> {
  past: T[];
  present: T;
  future: T[];
  /** Key of the last push; a push with the same key replaces the present instead of stacking. */
  coalesceKey: string | null;
}

export const HISTORY_LIMIT = 200;

export function historyInit<T>(present: T): History<T> {
  return { past: [], present, future: [], coalesceKey: null };
}

export function historyPush<T>(h: History<T>, next: T, coalesceKey: string | null = null): History<T> {
  if (coalesceKey !== null && coalesceKey === h.coalesceKey && h.past.length > 0) {
    return { past: h.past, present: next, future: [], coalesceKey };
  }
  const past = [...h.past, h.present];
  if (past.length > HISTORY_LIMIT) past.splice(0, past.length - HISTORY_LIMIT);
  return { past, present: next, future: [], coalesceKey };
}

export function historyUndo<T>(h: History<T>): History<T> {
  if (h.past.length === 0) return h;
  const present = h.past[h.past.length - 1];
  return { past: h.past.slice(0, -1), present, future: [h.present, ...h.future], coalesceKey: null };
}

export function historyRedo<T>(h: History<T>): History<T> {
  if (h.future.length === 0) return h;
  const [present, ...future] = h.future;
  return { past: [...h.past, h.present], present, future, coalesceKey: null };
}

/** Replaces the present without making an undo step (positions while dragging, say). */
export function historyReplace<T>(h: History<T>, present: T): History<T> {
  return { ...h, present };
}
