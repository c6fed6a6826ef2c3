"""`python -m engine <command>`: subcommands come from the modules in SUBCOMMAND_MODULES.

Each module has `register(subparsers)`, which adds its parsers and sets `func` on each:
`func(args: argparse.Namespace) -> int` returns the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

SUBCOMMAND_MODULES = ["engine.cli_graph", "engine.cli_train", "engine.import_fx.cli"]


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def make_parser() -> argparse.ArgumentParser:
    """The top-level parser with every available subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="python -m engine",
        description="Netloom engine: validate, generate code for, train and export graph specs, "
        "and import existing PyTorch models.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        # A module written by another part of the project may not exist yet; skip it.
        if _module_exists(name):
            importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand and return its exit status."""
    parser = make_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    status = func(args)
    return 0 if status is None else int(status)
