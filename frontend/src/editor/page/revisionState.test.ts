import { describe, expect, it } from "vitest";
import type { GraphSpec } from "../../api/types";
import { EMPTY_SPEC, docToSpec, specToDoc } from "../convert";
import { INITIAL_REVISIONS, type RevisionAction, type RevisionState, isDirty, revisionReducer, saveStateText } from "./revisionState";

const apply = (state: RevisionState, ...actions: RevisionAction[]) => actions.reduce(revisionReducer, state);
const spec = (out: number): GraphSpec => ({
  version: 1,
  inputs: [{ id: "x", shape: [4] }],
  nodes: [{ id: "fc", op: "Linear", params: { out_features: out }, inputs: ["x"] }],
  outputs: ["fc"],
});
const latest = { number: 4, author: "bo", createdAt: null };
const opened = apply(INITIAL_REVISIONS, { type: "opened", saved: { spec: docToSpec(specToDoc(spec(2))), revision: 2 } });

describe("the open graph against the server", () => {
  it("is unsaved once the canvas differs from the saved revision, or from an empty canvas", () => {
    expect(isDirty(opened)).toBe(false);
    expect(isDirty(apply(opened, { type: "edited", spec: docToSpec(specToDoc(spec(2))) }))).toBe(false);
    expect(isDirty(apply(opened, { type: "edited", spec: spec(3) }))).toBe(true);
    expect(isDirty(apply(INITIAL_REVISIONS, { type: "edited", spec: docToSpec(specToDoc(EMPTY_SPEC)) }))).toBe(false);
  });

  it("says in the status bar where saving stands", () => {
    expect(saveStateText(INITIAL_REVISIONS, false)).toBe("Nothing saved yet");
    expect(saveStateText(opened, false)).toBe("Saved · revision 2");
    expect(saveStateText(opened, true)).toBe("Unsaved changes");
    expect(saveStateText(apply(opened, { type: "saveStarted" }), true)).toBe("Saving…");
    expect(saveStateText(apply(opened, { type: "saveFailed", message: "offline" }), true)).toBe("Save failed: offline");
  });

  it("moves to the revision it saved, dropping the notice of a newer one", () => {
    const s = apply(opened, { type: "latestSeen", newer: latest }, { type: "saveStarted" });
    expect(s.saving).toBe(true);
    const done = apply(s, { type: "saved", saved: { spec: spec(3), revision: 5 } });
    expect(done).toMatchObject({ saving: false, remote: null, saved: { revision: 5 }, revisionsKey: s.revisionsKey + 1 });
  });

  it("loads a newer revision as the saved state, closing the comparison and the notice", () => {
    const failed = apply(opened, { type: "latestSeen", newer: latest }, { type: "saveStarted" }, { type: "saveFailed", message: "offline" });
    expect(apply(failed, { type: "diffOpened", from: 2, to: 4 })).toMatchObject({ diff: { from: 2, to: 4 } });
    const loaded = apply(failed, { type: "diffOpened", from: 2, to: 4 }, { type: "revisionLoaded", saved: { spec: spec(9), revision: 4 } });
    expect(loaded).toMatchObject({ saveError: null, diff: null, remote: null, saved: { revision: 4 }, revisionsKey: 2 });
  });

  it("notices a newer revision once, and lets it go when there is none", () => {
    const seen = apply(opened, { type: "latestSeen", newer: latest });
    expect(seen).toMatchObject({ remote: latest, revisionsKey: 1 });
    expect(apply(seen, { type: "latestSeen", newer: { ...latest } })).toBe(seen);
    expect(apply(seen, { type: "latestSeen", newer: { ...latest, number: 5 } }).revisionsKey).toBe(2);
    expect(apply(seen, { type: "latestSeen", newer: null }).remote).toBeNull();
    expect(apply(opened, { type: "latestSeen", newer: null })).toBe(opened);
  });

  it("keeps a save under way when another request fails", () => {
    const s = apply(opened, { type: "saveStarted" }, { type: "failed", message: "no revision 9" });
    expect(s).toMatchObject({ saving: true, saveError: "no revision 9" });
  });
});
