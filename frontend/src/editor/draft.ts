// Unsaved work survives a reload: the canvas content is kept in localStorage per graph until saved.
import type { GraphSpec } from "../api/types";

export interface Draft {
  /** The revision the draft started from (null: the graph had none). */
  baseRevision: number | null;
  spec: GraphSpec;
  savedAt: string;
}

const key = (graphId: number) => `netloom:draft:${graphId}`;

export function loadDraft(graphId: number): Draft | null {
  try {
    const raw = localStorage.getItem(key(graphId));
    if (!raw) return null;
    const d = JSON.parse(raw) as Draft;
    return d && typeof d === "object" && d.spec && Array.isArray(d.spec.inputs) ? d : null;
  } catch {
    return null;
  }
}

export function storeDraft(graphId: number, draft: Draft): void {
  try {
    localStorage.setItem(key(graphId), JSON.stringify(draft));
  } catch {
    // A full quota must not break editing; the banner still says "unsaved".
  }
}

export function clearDraft(graphId: number): void {
  localStorage.removeItem(key(graphId));
}
