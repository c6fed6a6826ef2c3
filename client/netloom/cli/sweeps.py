"""`netloom sweeps list|create|show|cancel`: hyper-parameter and layer-size searches."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from netloom.cli.common import (
    EXIT_OK,
    EXIT_RUN_CANCELLED,
    EXIT_RUN_FAILED,
    Output,
    _client,
    _merge,
    _read_config,
    _table,
    parse_set,
)
from netloom.client import Client
from netloom.errors import NetloomError


def _read_space(value: str) -> dict[str, Any]:
    """--space: a JSON file, or the JSON itself."""
    text = value
    if not value.lstrip().startswith("{"):
        try:
            text = Path(value).read_text()
        except OSError as exc:
            raise NetloomError(f"cannot read the space file {value}: {exc}") from None
    try:
        space = json.loads(text)
    except ValueError as exc:
        raise NetloomError(f"--space is not JSON: {exc}") from None
    if not isinstance(space, dict):
        raise NetloomError("--space must be an object {key: distribution}")
    return space


def _sweep_row(sweep: Mapping[str, Any]) -> dict[str, Any]:
    progress = sweep.get("progress") or {}
    best = sweep.get("best") or {}
    return {
        **sweep,
        "progress": f"{progress.get('done', 0)}/{progress.get('total', 0)}",
        "best": f"{best['value']:.4g} (#{best['number']})" if best else "",
    }


def cmd_sweeps_list(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        sweeps = client.sweeps(team=args.team, status=args.status, graph=args.graph)
    out.result(
        sweeps,
        _table(
            [_sweep_row(s) for s in sweeps],
            ["id", "name", "status", "strategy", "progress", "best", "graph_name"],
        ),
    )
    return EXIT_OK


def _sweep_text(sweep: Mapping[str, Any]) -> list[str]:
    objective = sweep.get("objective") or {}
    row = _sweep_row(sweep)
    lines = [
        f"sweep {sweep['id']} {sweep['name']!r}: {sweep['status']}"
        + (f" ({sweep['error']})" if sweep.get("error") else ""),
        f"  {sweep['strategy']}, pruner {sweep['pruner']}, "
        f"{objective.get('mode')} {objective.get('metric')}, {row['progress']} trials"
        + (f", best {row['best']}" if row["best"] else ""),
    ]
    trials = [
        {
            **t,
            "value": f"{t['value']:.4g}" if isinstance(t.get("value"), float) else "",
            "params": " ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                for k, v in t["params"].items()
            ),
        }
        for t in sweep.get("trials") or []
    ]
    if trials:
        lines += _table(trials, ["number", "run", "state", "value", "params", "reason"])
    return lines


def cmd_sweeps_create(args: argparse.Namespace, out: Output) -> int:
    config = _merge(_read_config(args.config), parse_set(args.set or []))
    with _client(args) as client:
        sweep = client.sweep_create(
            name=args.name,
            graph=args.graph,
            dataset=args.dataset,
            revision=args.revision,
            config=config,
            space=_read_space(args.space),
            team=args.team,
            strategy=args.strategy,
            pruner=args.pruner,
            objective={"metric": args.metric, "mode": args.mode},
            budget=args.budget,
            parallelism=args.parallelism,
            seed=args.seed,
        )
        if args.follow:
            return _sweep_follow(client, sweep["id"], out)
    out.result(sweep, _sweep_text(sweep))
    return EXIT_OK


def cmd_sweeps_show(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        if args.follow:
            return _sweep_follow(client, args.id, out)
        sweep = client.sweep(args.id)
    out.result(sweep, _sweep_text(sweep))
    return EXIT_OK


SWEEP_EXIT = {"succeeded": EXIT_OK, "failed": EXIT_RUN_FAILED, "cancelled": EXIT_RUN_CANCELLED}


def _sweep_follow(client: Client, sweep_id: int, out: Output, *, interval: float = 2.0) -> int:
    """A live bar of trials ended (best value so far) until the sweep ends; exit status as for runs."""
    import time

    from tqdm import tqdm

    bar = tqdm(total=None, unit="trial", desc=f"sweep {sweep_id}", file=sys.stderr, disable=out.json,
               dynamic_ncols=True)
    try:
        while True:
            sweep = client.sweep(sweep_id)
            progress = sweep.get("progress") or {}
            if progress.get("total") and bar.total != progress["total"]:
                bar.total = progress["total"]
            done = int(progress.get("done") or 0)
            if done > bar.n:
                bar.update(done - bar.n)
            best = sweep.get("best") or {}
            postfix = f"{progress.get('running', 0)} running, {progress.get('pruned', 0)} pruned"
            if best.get("value") is not None:
                postfix += f", best {best['value']:.4g} (trial {best['number']})"
            bar.set_postfix_str(postfix)
            if sweep["status"] in SWEEP_EXIT:
                break
            time.sleep(interval)
    finally:
        bar.close()
    out.result(sweep, _sweep_text(sweep))
    return SWEEP_EXIT[sweep["status"]]


def cmd_sweeps_cancel(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        sweep = client.sweep_cancel(args.id)
    running = (sweep.get("progress") or {}).get("running", 0)
    out.result(
        sweep,
        f"sweep {sweep['id']}: {sweep['status']}"
        + (f" ({running} running trial(s) stopping)" if running else ""),
    )
    return EXIT_OK


def add_sweeps_commands(
    commands: Any,
    add: Callable[..., argparse.ArgumentParser],
    team_option: Callable[[argparse.ArgumentParser], None],
) -> None:
    """The `sweeps` command group."""
    sweeps = commands.add_parser(
        "sweeps", help="search hyper-parameters and layer sizes: create, list, show, cancel"
    ).add_subparsers(dest="action", required=True, metavar="ACTION")
    sweeps_list = add(sweeps, "list", cmd_sweeps_list, "the sweeps of your teams")
    team_option(sweeps_list)
    sweeps_list.add_argument("--status", help="comma-separated statuses")
    sweeps_list.add_argument("--graph", type=int)
    sweep_new = add(
        sweeps, "create", cmd_sweeps_create, "start a sweep: trials are runs of the graph"
    )
    sweep_new.add_argument("--name", required=True)
    sweep_new.add_argument("--graph", type=int, required=True)
    sweep_new.add_argument("--revision", type=int, help="default: the graph's latest")
    sweep_new.add_argument("--dataset", type=int, required=True)
    sweep_new.add_argument(
        "--space",
        required=True,
        metavar="FILE|JSON",
        help='e.g. {"optimizer.lr": {"type": "float", "low": 1e-4, "high": 0.1, "log": true}}',
    )
    sweep_new.add_argument("--config", help="the base training config, a JSON or TOML file")
    sweep_new.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="a base config field"
    )
    sweep_new.add_argument("--strategy", choices=["grid", "random", "tpe"], default="tpe")
    sweep_new.add_argument(
        "--pruner", choices=["none", "median", "successive_halving"], default="none"
    )
    sweep_new.add_argument("--metric", default="val/loss", help="the objective (a val/ metric)")
    sweep_new.add_argument("--mode", choices=["min", "max"], default="min")
    sweep_new.add_argument("--budget", type=int, help="trials at most (default 20)")
    sweep_new.add_argument("--parallelism", type=int, help="trials at once (default 2)")
    sweep_new.add_argument("--seed", type=int)
    sweep_new.add_argument(
        "--follow", action="store_true", help="a live bar of trials until it ends; exit status says how"
    )
    team_option(sweep_new)
    show = add(sweeps, "show", cmd_sweeps_show, "a sweep, its best trial and every trial")
    show.add_argument("id", type=int)
    show.add_argument(
        "--follow", action="store_true", help="a live bar of trials until it ends; exit status says how"
    )
    sweep_cancel = add(
        sweeps, "cancel", cmd_sweeps_cancel, "cancel a sweep and its queued and running trials"
    )
    sweep_cancel.add_argument("id", type=int)
