import { describe, expect, it } from "vitest";
import { checkpointExportUrl, metricColumns, prunedLine } from "./CheckpointsPanel";
import type { Checkpoint } from "./types";

const ckpt = (name: string, metrics: Record<string, number | null>): Checkpoint => ({
  name, kind: "epoch", step: 1, epoch: 1, metrics, available: true, default: false, created_at: "",
});

describe("the checkpoints panel", () => {
  it("shows the validation loss first, then the other val metrics, at most three", () => {
    const rows = [ckpt("epoch-0001", { "val/accuracy": 0.5, "val/loss": 1.2 }), ckpt("best", { "val/f1": 0.4, "val/mae": null, lr: 0.1 })];
    expect(metricColumns(rows)).toEqual(["val/loss", "val/accuracy", "val/f1"]);
    expect(metricColumns([])).toEqual([]);
  });

  it("downloads a checkpoint's export by name and format", () => {
    expect(checkpointExportUrl(7, "epoch-0003", "onnx")).toBe("/api/runs/7/checkpoints/epoch-0003/export/?format=onnx");
    expect(prunedLine(1)).toBe("1 earlier checkpoint was pruned");
    expect(prunedLine(59)).toBe("59 earlier checkpoints were pruned");
  });
});
