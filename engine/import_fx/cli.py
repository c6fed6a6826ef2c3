"""`python -m engine import path/to/model.py:ClassName --input-shape 1,28,28 --out spec.json`."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_UNSUPPORTED, EXIT_UNREADABLE = 0, 1, 2
# The built spec must give the module's outputs; float32 noise is far below this.
MATCH_TOLERANCE = 1e-5

HELP = (
    "trace an existing nn.Module with torch.fx and write a graph spec of catalog ops "
    "(runs the model file's Python on this machine; the server never runs uploaded code)"
)


def _shape(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(part) for part in text.replace(" ", "").split(",") if part)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 1,28,28, got {text!r}") from None
    if not dims or any(d < 1 for d in dims):
        raise argparse.ArgumentTypeError(f"expected positive sizes like 1,28,28, got {text!r}")
    return dims


def _import(args: argparse.Namespace) -> int:
    from engine.build import InvalidSpec
    from engine.import_fx.convert import (
        InputShape,
        ModelImportError,
        check_outputs,
        import_module,
        instantiate,
        load_module_class,
        load_weights,
    )

    dtypes = args.input_dtype or ["float32"]
    if len(dtypes) == 1:
        dtypes = dtypes * len(args.input_shape)
    if len(dtypes) != len(args.input_shape):
        print("error: give one --input-dtype, or one per --input-shape", file=sys.stderr)
        return EXIT_UNREADABLE
    inputs = [InputShape(s, d) for s, d in zip(args.input_shape, dtypes, strict=True)]
    try:
        init_args: Any = json.loads(args.init_args) if args.init_args else None
    except ValueError as exc:
        print(f"error: --init-args is not JSON: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    try:
        module = instantiate(load_module_class(args.model), init_args)
        if args.weights:
            load_weights(module, args.weights)
        result = import_module(module, inputs)
    except ModelImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if result.problems:
        print(
            f"error: {len(result.problems)} part(s) of {args.model} have no catalog op; "
            "nothing written:",
            file=sys.stderr,
        )
        for line in result.problems:
            print(f"  {line}", file=sys.stderr)
        return EXIT_UNSUPPORTED
    try:
        built, diff = check_outputs(module, result, result.inputs)
    except InvalidSpec as exc:
        print(f"error: the imported spec does not validate: {exc}", file=sys.stderr)
        return EXIT_UNSUPPORTED
    except ModelImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNSUPPORTED
    if not diff <= MATCH_TOLERANCE:
        print(
            f"error: the built spec does not reproduce {args.model} (largest difference {diff:.3g}); "
            "nothing written",
            file=sys.stderr,
        )
        return EXIT_UNSUPPORTED
    out = Path(args.out)
    out.write_text(json.dumps(result.spec, indent=2) + "\n")
    ops = Counter(n["op"] for n in result.spec["nodes"])
    summary = ", ".join(f"{op} x{k}" if k > 1 else op for op, k in ops.most_common())
    print(f"wrote {out}: {len(result.spec['nodes'])} nodes ({summary})")
    print(f"the built spec reproduces the module's outputs (largest difference {diff:.3g})")
    if args.weights_out:
        from safetensors.torch import save_file

        from engine.train.checkpoint import state_dict_for_save

        save_file(state_dict_for_save(built), args.weights_out, metadata={"format": "pt"})
        print(
            f"wrote {args.weights_out}: {len(result.state_dict)} tensors named as the spec's nodes"
        )
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add `import` to `python -m engine`."""
    p = subparsers.add_parser(
        "import",
        help=HELP,
        description=HELP[0].upper() + HELP[1:] + ". Exit 0: written; 1: a part has no catalog "
        "op (one line each, with its source line) or the outputs differ; 2: cannot load or trace.",
    )
    p.add_argument("model", help="path/to/model.py:ClassName")
    p.add_argument(
        "--input-shape",
        type=_shape,
        action="append",
        required=True,
        help="per-sample input shape without the batch, e.g. 1,28,28 (once per forward input)",
    )
    p.add_argument(
        "--input-dtype",
        choices=("float32", "int64"),
        action="append",
        help="float32 (default) or int64 (token ids; found by itself for an input that feeds an "
        "nn.Embedding); once, or once per --input-shape",
    )
    p.add_argument("--init-args", help='JSON for the constructor: {"hidden": 64} or [64]')
    p.add_argument(
        "--weights", help="a safetensors state dict to load first (default: its own init)"
    )
    p.add_argument("--out", required=True, help="where to write the graph spec JSON")
    p.add_argument(
        "--weights-out",
        help="write the weights as a safetensors file named as engine.build names them",
    )
    p.set_defaults(func=_import)
