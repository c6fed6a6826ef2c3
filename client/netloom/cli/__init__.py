"""The `netloom` command: the service from a terminal or a CI job (`netloom --help`).

Every command takes `--json` (one JSON document on stdout, nothing else there). Errors print the
service's message and fields on stderr, never a traceback. Exit status: 0 done (a followed run
succeeded), 1 an error (the service refused, or could not be reached), 2 a usage error, 3 the
followed run failed, 4 it was cancelled.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from netloom.cli.account import add_account_commands
from netloom.cli.audit import add_audit_command
from netloom.cli.common import EXIT_ERROR, Output, _client
from netloom.cli.datasets import add_datasets_commands
from netloom.cli.exports import add_explain_command, add_export_commands
from netloom.cli.graphs import add_graphs_commands
from netloom.cli.models import add_model_commands
from netloom.cli.runs import add_runs_commands
from netloom.cli.sweeps import add_sweeps_commands
from netloom.cli.team import add_team_commands
from netloom.errors import ApiError, NetloomError


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print one JSON document (for scripts)",
    )
    common.add_argument(
        "--url", default=argparse.SUPPRESS, help="the service (default: the login, or NETLOOM_URL)"
    )
    common.add_argument(
        "--token",
        default=argparse.SUPPRESS,
        help="an API token (default: the login, or NETLOOM_TOKEN)",
    )
    parser = argparse.ArgumentParser(
        prog="netloom",
        parents=[common],
        description="Drive a Netloom service: datasets, graphs, runs, sweeps, exports.",
        epilog="Exit status: 0 done or run succeeded, 1 error, 2 usage, 3 run failed, 4 run cancelled.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(group: Any, name: str, handler: Any, help_text: str) -> argparse.ArgumentParser:
        sub = group.add_parser(name, parents=[common], help=help_text, description=help_text)
        sub.set_defaults(handler=handler)
        return sub

    def team_option(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--team", type=int, help="team id (default: your only team)")

    # One module per command group; the order here is the order of `netloom --help`.
    add_account_commands(commands, add)
    add_datasets_commands(commands, add, team_option)
    add_graphs_commands(commands, add, team_option)
    add_runs_commands(commands, add, team_option)
    add_sweeps_commands(commands, add, team_option)
    add_export_commands(commands, add)
    add_model_commands(commands, add, team_option, _client)
    add_team_commands(commands, add, team_option, _client)
    add_audit_command(commands, add, _client)
    add_explain_command(commands, add)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name, default in (("json", False), ("url", None), ("token", None)):
        if not hasattr(args, name):
            setattr(args, name, default)
    out = Output(args.json)
    try:
        return args.handler(args, out)
    except ApiError as error:
        if out.json:
            print(json.dumps(error.as_json(), indent=2))
        else:
            print("\n".join(error.lines()), file=sys.stderr)
        return EXIT_ERROR
    except NetloomError as error:
        if out.json:
            print(json.dumps({"error": {"code": type(error).__name__, "message": str(error)}}))
        else:
            print(f"error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
