"""Formats for other runtimes against fp32: size, accuracy on the test split, CPU latency.

For each example network (iris MLP, digits MLP, digits CNN; examples/specs), trained a few epochs
on its built-in dataset and exported as a registry version is, this builds `.pt2`
(torch.export.save of the ExportedProgram, dynamic batch), int8 (torchao Int8WeightOnlyConfig,
unwrapped, exported) and, with --aoti, AOTInductor (compiled by the C++ compiler: minutes here) with
engine.export.formats.build_formats, and prints each format's file size, the metric against
fp32 and the median latency of one call at batch 1 and 64 against the fp32 nn.Module (the
model predict.py and the model server run), on one torch thread.

    .venv/bin/python bench/formats.py [--aoti] [--repeats 200] [--json var/bench/formats.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import torch

from engine.data import DataRecipe, load_dataset
from engine.export import export_dir, load_exported
from engine.export.formats import build_formats
from engine.train import train

ROOT = Path(__file__).resolve().parents[1]
CASES = [("iris MLP", "iris_mlp", "iris", 30), ("digits MLP", "digits_mlp", "digits", 5),
         ("digits CNN", "digits_cnn", "digits", 2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aoti", action="store_true", help="also build AOTInductor (a compiler run per network)")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    formats = ["pt2", "int8", *(["aoti"] if args.aoti else [])]
    rows = []
    for label, spec_name, dataset, epochs in CASES:
        data = load_dataset(DataRecipe.model_validate({"source": {"kind": "builtin", "name": dataset}}))
        spec = json.loads((ROOT / "examples" / "specs" / f"{spec_name}.json").read_text())
        result = train(spec, data, {"epochs": epochs, "optimizer": {"lr": 0.01}, "seed": 0})
        with tempfile.TemporaryDirectory() as tmp:
            out = export_dir(result.model, spec, {}, result.metrics, tmp, data_info=data.info, onnx=False)
            parsed, model = load_exported(out)
            fp32_bytes = (Path(out) / "model.safetensors").stat().st_size
            started = time.perf_counter()
            built = build_formats(model, parsed, out, formats, test=data.test, task=data.info.task,
                                  repeats=args.repeats)
            took = time.perf_counter() - started
        for fmt, f in built.items():
            rows.append({"network": label, "format": fmt, "safetensors_bytes": fp32_bytes, **f})
        print(f"{label}: built {', '.join(formats)} in {took:.1f} s", flush=True)
    print()
    print("| network | format | file | size | fp32 safetensors | accuracy (fp32) | delta | max abs diff "
          "| b1 ms (fp32) | b64 ms (fp32) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['network']} | {r['format']} | not built: {r['error']} |||||||")
            continue
        lat, base = r["latency_ms"], r["fp32_latency_ms"]
        print(f"| {r['network']} | {r['format']} | `{r['file']}` | {r['size'] / 1024:.1f} KiB "
              f"| {r['safetensors_bytes'] / 1024:.1f} KiB | {r['value']:.4f} ({r['fp32_value']:.4f}) "
              f"| {r['accuracy_delta']:+.4f} | {r['max_abs_diff']:.2g} | {lat['b1']:.3f} ({base['b1']:.3f}) "
              f"| {lat['b64']:.3f} ({base['b64']:.3f}) |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": platform.machine(), "torch": torch.__version__,
                                         "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
