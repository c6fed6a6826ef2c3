"""`netloom graphs list|push|pull`: graph specs to and from the service."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netloom.cli.common import EXIT_ERROR, EXIT_OK, Output, _client, _table
from netloom.errors import NetloomError


def cmd_graphs_list(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        graphs = client.graphs(team=args.team)
    out.result(graphs, _table(graphs, ["id", "team", "name", "latest_revision", "updated_at"]))
    return EXIT_OK


def cmd_graphs_push(args: argparse.Namespace, out: Output) -> int:
    path = Path(args.spec)
    try:
        spec = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise NetloomError(f"cannot read the spec {path}: {exc}") from None
    with _client(args) as client:
        if not args.draft:
            report = client.validate(spec)
            if not report["valid"]:
                if out.json:
                    out.result({"valid": False, "errors": report["errors"]}, "")
                else:
                    print(
                        f"error: {path} is not a valid graph ({len(report['errors'])} problem(s)); nothing saved",
                        file=sys.stderr,
                    )
                    for problem in report["errors"]:
                        where = problem.get("node") or "spec"
                        if problem.get("field"):
                            where += f".{problem['field']}"
                        print(
                            f"  node {where}: {problem['message']} [{problem['code']}]",
                            file=sys.stderr,
                        )
                return EXIT_ERROR
        saved: Any = client.graph_push(
            spec, name=args.name or path.stem, graph=args.graph, team=args.team
        )
    if args.graph is not None:
        text = f"graph {args.graph}: revision {saved['number']}" + (
            "" if saved["valid"] else " (draft with errors)"
        )
    else:
        text = f'graph {saved["id"]} "{saved["name"]}": revision {saved["latest_revision"]}'
    out.result(saved, text)
    return EXIT_OK


def cmd_graphs_pull(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        spec = client.graph_pull(args.id, revision=args.revision)
    text = json.dumps(spec, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
        out.result({"graph": args.id, "path": args.out}, f"wrote {args.out}")
    else:
        print(text)
    return EXIT_OK


def cmd_graphs_shared(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        state = client.graph_collab(args.id)
    text = json.dumps(state["spec"], indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
        out.result({"graph": args.id, "path": args.out}, f"wrote {args.out}")
    else:
        out.result(state, text)
    return EXIT_OK


def cmd_graphs_save_shared(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        revision = client.graph_collab_save(args.id, message=args.message)
    errors = revision.get("error_count") or 0
    state = "valid" if revision.get("valid") else f"draft with {errors} error(s)"
    out.result(revision, f"graph {args.id}: revision {revision['number']} ({state})")
    return EXIT_OK


def add_graphs_commands(
    commands: Any,
    add: Callable[..., argparse.ArgumentParser],
    team_option: Callable[[argparse.ArgumentParser], None],
) -> None:
    """The `graphs` command group."""
    graphs = commands.add_parser("graphs", help="list, push or pull graph specs; read or save a shared canvas").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    team_option(add(graphs, "list", cmd_graphs_list, "the graphs of your teams"))
    push = add(
        graphs,
        "push",
        cmd_graphs_push,
        "save a spec as a new graph (or --graph ID: a new revision)",
    )
    push.add_argument("spec", metavar="SPEC.json")
    push.add_argument("--name", help="default: the file's name")
    push.add_argument("--graph", type=int, help="add a revision to this graph")
    push.add_argument("--draft", action="store_true", help="save even when the spec has errors")
    team_option(push)
    pull = add(graphs, "pull", cmd_graphs_pull, "print (or --out FILE) a graph's spec")
    pull.add_argument("id", type=int)
    pull.add_argument("--revision", type=int, help="default: the latest")
    pull.add_argument("--out")
    shared = add(graphs, "shared", cmd_graphs_shared, "print (or --out FILE) the spec of a graph's shared canvas")
    shared.add_argument("id", type=int)
    shared.add_argument("--out")
    save_shared = add(graphs, "save-shared", cmd_graphs_save_shared, "save a graph's shared canvas as a revision")
    save_shared.add_argument("id", type=int)
    save_shared.add_argument("-m", "--message", help="why (kept in the team's audit log)")
