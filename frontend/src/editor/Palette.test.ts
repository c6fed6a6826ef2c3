import { describe, expect, it } from "vitest";
import type { OpSchema } from "../api/types";
import { matchOps } from "./Palette";

function op(name: string, category: string, torch_name: string, keywords: string[], help: string): OpSchema {
  return { name, category, torch_name, keywords, help, arity: { min: 1, max: 1 }, input_dtypes: ["float32"], input: "any", inferred: [], kind: "module", multi_output: false, params: [] };
}

const OPS: OpSchema[] = [
  op("Conv2d", "Convolution", "nn.Conv2d", ["convolution", "filter", "cnn"], "2-d convolution over a [channels, height, width] input (images)."),
  op("AdaptiveAvgPool2d", "Pooling", "nn.AdaptiveAvgPool2d", ["global pooling", "global average pooling", "gap"], "Average-pool a [C, H, W] input to a fixed size."),
  op("Split", "Shape", "torch.split", ["slice", "divide", "several outputs"], "Cut the input along dim into pieces."),
  op("Pad", "Shape", "nn.functional.pad", ["padding", "border"], "Pad the last dimensions."),
  op("Max", "Reduction", "torch.amax", ["reduce"], "Maximum over the chosen per-sample dimensions."),
  op("MaxPool2d", "Pooling", "nn.MaxPool2d", ["max pooling", "downsample"], "Maximum over sliding windows."),
];

const names = (q: string) => matchOps(OPS, q).map((o) => o.name);

describe("palette search", () => {
  it("finds an op by its PyTorch name, written any of the usual ways", () => {
    expect(names("nn.Conv2d")[0]).toBe("Conv2d");
    expect(names("torch.nn.Conv2d")[0]).toBe("Conv2d");
    expect(names("torch.split")[0]).toBe("Split");
    expect(names("F.pad")[0]).toBe("Pad");
    expect(names("amax")[0]).toBe("Max");
  });

  it("finds an op by what it does", () => {
    expect(names("global average")).toEqual(["AdaptiveAvgPool2d"]);
    expect(names("gap")).toEqual(["AdaptiveAvgPool2d"]);
    expect(names("several outputs")).toEqual(["Split"]);
    expect(names("downsample")).toEqual(["MaxPool2d"]);
    expect(names("cnn")).toEqual(["Conv2d"]);
  });

  it("puts the exact name first and drops what does not match", () => {
    expect(names("max")).toEqual(["Max", "MaxPool2d"]);
    expect(names("no such thing")).toEqual([]);
    expect(names("")).toHaveLength(OPS.length);
  });
});
