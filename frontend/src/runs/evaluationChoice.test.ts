import { describe, expect, it } from "vitest";
import { checkpointOptions, evaluatedWords, exportIsNotFinal, finalCheckpoint, finalWords } from "./evaluationChoice";
import type { Checkpoint } from "./types";

function cp(name: string, step: number, epoch: number, extra: Partial<Checkpoint> = {}): Checkpoint {
  return { name, kind: name === "best" ? "best" : "epoch", step, epoch, metrics: {}, available: true, default: false, created_at: "", ...extra };
}

const run = { progress: { step: 120, epoch: 3 } } as Parameters<typeof finalWords>[0];
// Best at epoch 2; the run ended at epoch 3 (step 120).
const kept = [cp("epoch-0001", 40, 1), cp("epoch-0002", 80, 2), cp("best", 80, 2, { default: true }), cp("epoch-0003", 120, 3)];

describe("which weights a figure is about", () => {
  it("names the final weights and the checkpoint at the end of training", () => {
    expect(finalWords(run)).toBe("the final weights (epoch 3, step 120)");
    expect(finalCheckpoint(run, kept)?.name).toBe("epoch-0003");
    expect(exportIsNotFinal(run, kept)).toBe(true);
  });

  it("offers the downloads' weights first, then every other kept checkpoint, newest first", () => {
    const options = checkpointOptions(run, kept);
    expect(options.map((o) => o.value)).toEqual(["", "epoch-0003", "epoch-0002", "epoch-0001"]);
    expect(options[0].label).toBe("best (epoch 2, step 80): the downloads' weights");
    expect(options[1].label).toBe("epoch-0003 (epoch 3, step 120), the final weights");
  });

  it("says when the downloads hold the final weights", () => {
    const noBest = [cp("epoch-0001", 40, 1), cp("epoch-0003", 120, 3, { default: true })];
    expect(exportIsNotFinal(run, noBest)).toBe(false);
    expect(checkpointOptions(run, noBest)[0].label).toBe("epoch-0003 (epoch 3, step 120): the downloads' weights, the final weights");
  });

  it("falls back to the trained model when no checkpoint is kept", () => {
    expect(checkpointOptions(run, [])).toEqual([{ value: "", label: "the trained model: the final weights (epoch 3, step 120)" }]);
    expect(evaluatedWords("", run, [])).toBe("the final weights (epoch 3, step 120)");
    expect(evaluatedWords("", run, kept)).toBe("checkpoint best (epoch 2, step 80)");
    expect(evaluatedWords("epoch-0001", run, kept)).toBe("checkpoint epoch-0001 (epoch 1, step 40)");
  });

  it("says when the best checkpoint is the last one", () => {
    const bestLast = [cp("epoch-0002", 80, 2), cp("best", 120, 3, { default: true }), cp("epoch-0003", 120, 3)];
    expect(checkpointOptions(run, bestLast)[0].label).toBe("best (epoch 3, step 120): the downloads' weights, the final weights");
    expect(exportIsNotFinal(run, bestLast)).toBe(false);
  });

  it("leaves pruned checkpoints out", () => {
    const pruned = [cp("epoch-0001", 40, 1, { available: false }), cp("epoch-0003", 120, 3, { default: true })];
    expect(checkpointOptions(run, pruned).map((o) => o.value)).toEqual([""]);
  });
});
