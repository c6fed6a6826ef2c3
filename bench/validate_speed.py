"""How fast is validate()? A ~1e9-parameter spec and a 1,000-node graph, side by side with
the obvious alternatives measured in the same process:

- running every node on the `meta` device (the generic shape rule, no weights), and
- materialising the model on CPU and running one sample through it (the naive way to learn
  shapes and parameter counts).

Run: .venv/bin/python bench/validate_speed.py [--repeats N]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from torch.fx.passes.shape_prop import ShapeProp  # noqa: E402

from engine.build import build, node_inputs  # noqa: E402
from engine.ops import meta_infer, registry  # noqa: E402
from engine.validate import Limits, validate  # noqa: E402


def billion_param_spec() -> dict[str, Any]:
    """16384 -> 16384 -> 16384 -> 16384 -> 16384 -> 10: about 1.07e9 parameters."""
    widths = [16384, 16384, 16384, 16384, 10]
    nodes, prev = [], "x"
    for i, width in enumerate(widths):
        nodes.append(
            {"id": f"fc{i}", "op": "Linear", "params": {"out_features": width}, "inputs": [prev]}
        )
        prev = f"fc{i}"
        if i < len(widths) - 1:
            nodes.append({"id": f"act{i}", "op": "ReLU", "inputs": [prev]})
            prev = f"act{i}"
    return {
        "version": 1,
        "inputs": [{"id": "x", "shape": [16384]}],
        "nodes": nodes,
        "outputs": [prev],
    }


def residual_spec(blocks: int = 250, width: int = 64) -> dict[str, Any]:
    """`blocks` x (Linear, LayerNorm, GELU, Add-residual): 4 nodes per block."""
    nodes, prev = [], "x"
    for b in range(blocks):
        nodes += [
            {"id": f"fc{b}", "op": "Linear", "params": {"out_features": width}, "inputs": [prev]},
            {"id": f"norm{b}", "op": "LayerNorm", "inputs": [f"fc{b}"]},
            {"id": f"act{b}", "op": "GELU", "inputs": [f"norm{b}"]},
            {"id": f"res{b}", "op": "Add", "inputs": [f"act{b}", prev]},
        ]
        prev = f"res{b}"
    return {
        "version": 1,
        "inputs": [{"id": "x", "shape": [width]}],
        "nodes": nodes,
        "outputs": [prev],
    }


def timed(fn: Callable[[], Any], repeats: int) -> float:
    """Median wall time in seconds over `repeats` runs (after one warm-up)."""
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def meta_shapes(spec: dict[str, Any], limits: Limits) -> None:
    """Every node run on the `meta` device, one after another (the generic shape rule)."""
    report = validate(spec, limits)
    assert report.spec is not None
    by_id = {n.id: n for n in report.spec.nodes}
    for node_id in report.order:
        meta_infer(
            registry[by_id[node_id].op], report.resolved[node_id], node_inputs(report, node_id)
        )


def materialised(spec: dict[str, Any], limits: Limits) -> None:
    """Build real weights on CPU and push one sample through to learn every shape."""
    model = build(spec, limits=limits)
    with torch.no_grad():
        ShapeProp(model).propagate(torch.randn(1, *spec["inputs"][0]["shape"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    limits = Limits(max_params=2_000_000_000, max_nodes=5000)

    big = billion_param_spec()
    big_report = validate(big, limits)
    assert big_report.valid, big_report.summary()
    small = residual_spec()
    small_report = validate(small, limits)
    assert small_report.valid, small_report.summary()

    # (case, seconds, compare with the CPU build of the same graph?)
    rows = [
        (
            f"validate, {big_report.total_params / 1e9:.2f}e9 params, {len(big['nodes'])} nodes",
            timed(lambda: validate(big, limits), args.repeats),
            False,
        ),
        (
            "  same graph, every node run on meta",
            timed(lambda: meta_shapes(big, limits), args.repeats),
            False,
        ),
        (
            f"validate, {len(small['nodes'])} nodes, {small_report.total_params:,} params",
            timed(lambda: validate(small, limits), args.repeats),
            True,
        ),
        (
            "  same graph, every node run on meta",
            timed(lambda: meta_shapes(small, limits), args.repeats),
            True,
        ),
        (
            "  same graph, build on CPU + one forward (baseline)",
            timed(lambda: materialised(small, limits), args.repeats),
            True,
        ),
    ]
    baseline = rows[-1][1]
    print(
        f"python {platform.python_version()}, torch {torch.__version__}, {platform.machine()}, 1 thread, median of {args.repeats}"
    )
    print(f"| {'case':<52} | {'seconds':>9} | {'vs baseline':>11} |")
    print(f"|{'-' * 54}|{'-' * 11}|{'-' * 13}|")
    for name, seconds, compare in rows:
        ratio = f"{seconds / baseline:.3f}x" if compare else ""
        print(f"| {name:<52} | {seconds:>9.4f} | {ratio:>11} |")


if __name__ == "__main__":
    main()
