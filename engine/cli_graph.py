"""Graph subcommands: ops, schema, validate, codegen."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from engine.spec import DEFAULT_MAX_SPEC_BYTES, SpecError, graph_json_schema, parse_spec

EXIT_VALID, EXIT_INVALID, EXIT_UNREADABLE = 0, 1, 2


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


def _read_spec(path: str, max_bytes: int) -> Any:
    """Read and parse SPEC.json, or print a one-line error and return None."""
    file = Path(path)
    try:
        size = file.stat().st_size
        if size > max_bytes:
            # Refuse before reading: a 50 MB file costs nothing but a stat().
            raise SpecError(f"spec is too large: {size} bytes, the limit is {max_bytes} bytes")
        return parse_spec(file.read_bytes(), max_bytes=max_bytes)
    except OSError as exc:
        print(f"error: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
    except SpecError as exc:
        print(f"error: {path}: {exc}", file=sys.stderr)
    return None


def _ops(args: argparse.Namespace) -> int:
    from engine.ops import catalog_json

    _print_json(catalog_json())
    return EXIT_VALID


def _schema(args: argparse.Namespace) -> int:
    _print_json(graph_json_schema())
    return EXIT_VALID


def _limits(args: argparse.Namespace) -> Any:
    from engine.validate import Limits

    defaults = Limits()
    return Limits(
        max_nodes=args.max_nodes or defaults.max_nodes,
        max_params=args.max_params or defaults.max_params,
        max_activation_bytes=defaults.max_activation_bytes,
        max_spec_bytes=args.max_bytes,
    )


def _validate(args: argparse.Namespace) -> int:
    from engine.validate import validate

    spec = _read_spec(args.spec, args.max_bytes)
    if spec is None:
        return EXIT_UNREADABLE
    report = validate(spec, _limits(args))
    _print_json(report.to_json())
    return EXIT_VALID if report.valid else EXIT_INVALID


def _codegen(args: argparse.Namespace) -> int:
    from engine.build import InvalidSpec
    from engine.codegen import codegen

    spec = _read_spec(args.spec, args.max_bytes)
    if spec is None:
        return EXIT_UNREADABLE
    try:
        source = codegen(spec, class_name=args.class_name, limits=_limits(args))
    except InvalidSpec as exc:
        print(f"error: {args.spec}: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    sys.stdout.write(source)
    return EXIT_VALID


def _add_limit_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-bytes", type=int, default=DEFAULT_MAX_SPEC_BYTES, help="largest spec file accepted"
    )
    parser.add_argument(
        "--max-nodes", type=int, default=None, help="most nodes accepted (default 2000)"
    )
    parser.add_argument(
        "--max-params", type=int, default=None, help="most parameters accepted (default 5e8)"
    )


def register(subparsers: Any) -> None:
    """Add the graph subcommands to `python -m engine`."""
    p = subparsers.add_parser("ops", help="print the op catalog as JSON")
    p.set_defaults(func=_ops)
    p = subparsers.add_parser("schema", help="print the graph spec's JSON Schema")
    p.set_defaults(func=_schema)
    p = subparsers.add_parser(
        "validate",
        help="check a spec and print the report JSON (exit 0 valid, 1 invalid, 2 unreadable)",
    )
    p.add_argument("spec", help="path to a graph spec JSON file")
    _add_limit_options(p)
    p.set_defaults(func=_validate)
    p = subparsers.add_parser("codegen", help="print the PyTorch source of a valid spec")
    p.add_argument("spec", help="path to a graph spec JSON file")
    p.add_argument("--class-name", default="Net", help="name of the generated class")
    _add_limit_options(p)
    p.set_defaults(func=_codegen)
