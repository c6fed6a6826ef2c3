"""`netloom export`, `netloom evaluate`, `netloom explain`: what a trained run gives."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from netloom.cli.common import EXIT_ERROR, EXIT_OK, Output, _client
from netloom.errors import ApiError


def cmd_export(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        try:
            path = client.export(
                args.run, format=args.format, out=args.out, checkpoint=args.checkpoint
            )
        except ApiError as error:
            kept = error.extra.get("checkpoints") if error.code == "run_not_trained" else None
            if not kept or out.json:
                raise
            print("\n".join(error.lines()), file=sys.stderr)
            print(
                f"hint: export a kept checkpoint instead: "
                f"netloom export {args.run} --checkpoint {kept[0]} --format {args.format}",
                file=sys.stderr,
            )
            return EXIT_ERROR
    out.result({"run": args.run, "format": args.format, "path": str(path)}, f"wrote {path}")
    return EXIT_OK


def cmd_explain(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        explanation = client.explain(
            args.run, index=args.index, method=args.method, target=args.target
        )
    if explanation["status"] == "failed":
        if out.json:
            out.result(explanation, "")
        else:
            print(f"error: the explanation failed: {explanation.get('error')}", file=sys.stderr)
        return EXIT_ERROR
    result: dict[str, Any] = dict(explanation.get("result") or {})
    lines = [
        f"explanation {explanation['id']} of run {args.run}, test row {args.index} ({explanation['method']})"
    ]
    classes = result.get("classes")
    if result.get("prediction") is not None:
        lines.append(f"  prediction: {class_text(result['prediction'], classes)}")
        if result.get("target") is not None and result["target"] != result["prediction"]:
            lines.append(f"  explained class: {class_text(result['target'], classes)}")
    elif result.get("output") is not None:
        lines.append(f"  output: {result['output']}")
    if result.get("delta") is not None:
        lines.append(f"  convergence delta: {result['delta']:.3g}")
    attributions = result.get("attributions")
    names = result.get("feature_names")
    if isinstance(attributions, list) and names and len(attributions) == len(names):
        ranked = sorted(
            zip(names, attributions, strict=True), key=lambda pair: -abs(float(pair[1]))
        )
        lines.append("  attributions:")
        lines += [f"    {name:>20}  {float(value):+.4f}" for name, value in ranked]
    out.result(explanation, lines)
    return EXIT_OK


def cmd_evaluate(args: argparse.Namespace, out: Output) -> int:
    from tqdm import tqdm

    with _client(args) as client, tqdm(
        total=1, desc=f"evaluating run {args.run}", file=sys.stderr, disable=out.json,
        bar_format="{desc}: {postfix} {elapsed}",
    ) as bar:  # fmt: skip
        def moved(job: Any) -> None:
            bar.set_postfix_str(job["state"])

        report = client.evaluate(args.run, checkpoint=args.checkpoint, progress=moved)
    which = f"checkpoint {args.checkpoint}" if args.checkpoint else "the final weights"
    lines = [f"evaluation of run {args.run} ({which}) on {report.get('rows')} {report.get('split')} rows"]
    figures = {**{f"macro {k}": v for k, v in (report.get("macro") or {}).items()}, **report}
    for name in ("accuracy", "macro f1", "mae", "rmse", "r2"):
        if isinstance(figures.get(name), (int, float)):
            lines.append(f"  {name}: {float(figures[name]):.4f}")
    if report.get("misclassified_total") is not None:
        lines.append(f"  misclassified: {report['misclassified_total']}")
    out.result(report, lines)
    return EXIT_OK


def class_text(index: Any, classes: Any) -> str:
    """`versicolor (class 1)` where the class names are known, else the index alone."""
    if isinstance(index, int) and isinstance(classes, list) and 0 <= index < len(classes):
        return f"{classes[index]} (class {index})"
    return str(index)


def add_export_commands(commands: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """The `export` and `evaluate` commands."""
    export = add(
        commands, "export", cmd_export, "download a succeeded run's weights, source or archive"
    )
    export.add_argument("run", type=int)
    export.add_argument(
        "--format",
        choices=["safetensors", "python", "onnx", "config", "zip"],
        default="safetensors",
    )
    export.add_argument("--out", default=".", metavar="DIR")
    export.add_argument("--checkpoint", metavar="NAME", help="a kept checkpoint's weights (best, epoch-0003, ...)")
    evaluate = add(
        commands, "evaluate", cmd_evaluate,
        "evaluate a run's final weights (or a kept checkpoint) on its test split, on the server's workers",
    )  # fmt: skip
    evaluate.add_argument("run", type=int)
    evaluate.add_argument("--checkpoint", metavar="NAME", help="a kept checkpoint (best, epoch-0003, ...)")


def add_explain_command(commands: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """The `explain` command (last in `netloom --help`)."""
    explain = add(
        commands, "explain", cmd_explain, "why the model answered as it did on a test row"
    )
    explain.add_argument("run", type=int)
    explain.add_argument("--index", type=int, required=True, help="test-split row")
    explain.add_argument("--method", default="integrated_gradients")
    explain.add_argument("--target", type=int)
