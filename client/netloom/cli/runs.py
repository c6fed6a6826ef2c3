"""`netloom runs list|start|watch|cancel|logs|compare` (and reproduce/lineage of lineage.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from typing import Any

from netloom.cli.common import (
    BAR_METRICS,
    EXIT_ERROR,
    EXIT_OK,
    RUN_EXIT,
    Output,
    _client,
    _merge,
    _metrics_text,
    _read_config,
    _table,
    parse_set,
)
from netloom.client import Client


def cmd_runs_list(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        runs = client.runs(team=args.team, status=args.status, filter=args.filter, ordering=args.ordering)
    rows = [
        {
            **run,
            "progress": _fraction(run.get("progress")),
            "metrics": _metrics_text(run.get("latest_metrics")),
        }
        for run in runs
    ]
    out.result(
        runs,
        _table(rows, ["id", "name", "team", "graph_name", "dataset_name", "status", "progress", "metrics"]),
    )
    return EXIT_OK


def _fraction(progress: Any) -> str:
    fraction = (progress or {}).get("fraction")
    return f"{fraction:.0%}" if isinstance(fraction, int | float) else ""


def cmd_runs_start(args: argparse.Namespace, out: Output) -> int:
    config = _merge(_read_config(args.config), parse_set(args.set or []))
    with _client(args) as client:
        # The run's team is the graph's; --team only makes the service check it.
        run = client.run_start(
            graph=args.graph,
            dataset=args.dataset,
            revision=args.revision,
            config=config,
            team=args.team,
        )
        if not args.follow:
            out.result(
                run,
                f"run {run['id']} {run['status']} (follow it with `netloom runs watch {run['id']}`)",
            )
            return EXIT_OK
        out.note(f"run {run['id']} {run['status']}")
        return _follow(client, run["id"], out)


def cmd_runs_watch(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        return _follow(client, args.id, out)


def _follow(client: Client, run_id: int, out: Output) -> int:
    """A live bar (steps, latest metrics) until the run ends; the exit status says how it ended."""
    from tqdm import tqdm

    bar = tqdm(
        total=None,
        unit="step",
        desc=f"run {run_id}",
        file=sys.stderr,
        disable=out.json,
        dynamic_ncols=True,
        mininterval=0.2,
    )
    latest: dict[str, Any] = {}

    def on_event(event: Any) -> None:
        kind = event["type"]
        progress = event.get("progress") or (
            event["run"].get("progress") if kind == "state" else None
        )
        if progress:
            if progress.get("total_steps") and bar.total != progress["total_steps"]:
                bar.total = progress["total_steps"]
                bar.refresh()
            if progress.get("step") is not None and progress["step"] >= bar.n:
                bar.update(progress["step"] - bar.n)
        if kind == "metric":
            latest.update(event["values"])
            if event["step"] > bar.n:
                bar.update(event["step"] - bar.n)
            shown = {k: v for k, v in latest.items() if k.endswith(BAR_METRICS)}
            bar.set_postfix_str(_metrics_text(shown or latest), refresh=False)
        elif kind == "status":
            bar.set_description_str(f"run {run_id} {event['status']}", refresh=False)
        elif kind == "log" and not out.json:
            bar.write(f"[{event['level']}] {event['message']}", file=sys.stderr)

    try:
        final = client.run_follow(run_id, on_event=on_event)
    finally:
        bar.close()
    run = client.run(run_id)
    status = final["status"]
    lines = [f"run {run_id} {status}" + (f": {run.get('error')}" if run.get("error") else "")]
    final_metrics = run.get("final_metrics") or final.get("final_metrics") or {}
    for key, value in sorted(final_metrics.items()):
        lines.append(f"  {key}: {value:.4g}" if isinstance(value, float) else f"  {key}: {value}")
    out.result(run, lines)
    return RUN_EXIT.get(status, EXIT_ERROR)


def cmd_runs_cancel(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        run = client.run_cancel(args.id)
    out.result(
        run,
        f"run {run['id']}: {run['status']}"
        + (" (stopping)" if run.get("cancel_requested") and run["status"] != "cancelled" else ""),
    )
    return EXIT_OK


def cmd_runs_logs(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        lines = client.run_logs(args.id)
    out.result(lines, [log_line(e) for e in lines] or ["(no log lines)"])
    return EXIT_OK


def log_line(event: Mapping[str, Any]) -> str:
    """One line of a run's log as its page shows it: a status change, a log line or a checkpoint."""
    step = event.get("step")
    at = f"step {step}: " if step is not None else ""
    kind = event["type"]
    if kind == "status":
        error = event.get("error")
        extra = f" - {error}" if error and error != event.get("detail") else ""
        level = "error" if event["status"] == "failed" else "status"
        return f"[{level}] {event['status']}: {event.get('detail') or ''}{extra}".rstrip()
    if kind == "checkpoint":
        also = f" (also kept as {', '.join(event['also'])})" if event.get("also") else ""
        return f"[info] {at}checkpoint {event['name']}{also}"
    return f"[{event['level']}] {at}{event['message']}"


def cmd_runs_compare(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        answer = client.compare(
            args.ids, keys=args.keys.split(",") if args.keys else None, max_points=args.max_points
        )
    lines = []
    for item in answer["runs"]:
        last = {
            key: (series.get("value") or [None])[-1]
            for key, series in (item.get("series") or {}).items()
        }
        lines.append(f"run {item['run']}: {_metrics_text(last)}")
    for diff in [*(answer.get("config_diff") or []), *(answer.get("graph_params_diff") or [])]:
        values = ", ".join(f"run {run}: {value!r}" for run, value in diff["values"].items())
        lines.append(f"  {diff['field']}: {values}")
    for change in answer.get("graph_diff") or []:
        runs = ", ".join(str(r) for r in change["runs"])
        lines.append(f"  graph revision {change['revision']} (runs {runs}): " + "; ".join(change["changes"]))
    out.result(answer, lines)
    return EXIT_OK


def add_runs_commands(
    commands: Any,
    add: Callable[..., argparse.ArgumentParser],
    team_option: Callable[[argparse.ArgumentParser], None],
) -> None:
    """The `runs` command group."""
    runs = commands.add_parser("runs", help="start, follow, cancel and read runs").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    runs_list = add(runs, "list", cmd_runs_list, "the runs of your teams")
    team_option(runs_list)
    runs_list.add_argument("--status", help="comma-separated statuses")
    runs_list.add_argument(
        "--filter", metavar="EXPR",
        help='runs query language, e.g. \'metrics.val/accuracy > 0.9 and tags = "baseline"\'',
    )  # fmt: skip
    runs_list.add_argument(
        "--ordering", metavar="KEY", help="e.g. --ordering=-metrics.val/accuracy (\"=\" before a leading -), config.optimizer.lr"
    )
    start = add(runs, "start", cmd_runs_start, "start a run of a graph on a dataset")
    start.add_argument("--graph", type=int, required=True)
    start.add_argument("--revision", type=int, help="default: the graph's latest")
    start.add_argument("--dataset", type=int, required=True)
    start.add_argument("--config", help="training config fields, a JSON or TOML file")
    start.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="a config field, e.g. optimizer.lr=0.01"
    )
    start.add_argument(
        "--follow", action="store_true", help="show progress until it ends; exit status says how"
    )
    team_option(start)
    watch = add(
        runs, "watch", cmd_runs_watch, "follow a run live until it ends; exit status says how"
    )
    watch.add_argument("id", type=int)
    cancel = add(runs, "cancel", cmd_runs_cancel, "cancel a run")
    cancel.add_argument("id", type=int)
    logs = add(runs, "logs", cmd_runs_logs, "a run's log lines")
    logs.add_argument("id", type=int)
    compare = add(runs, "compare", cmd_runs_compare, "runs' metrics side by side")
    compare.add_argument("ids", type=int, nargs="+")
    compare.add_argument("--keys", help="comma-separated metric names")
    compare.add_argument("--max-points", type=int)
    from netloom.cli.lineage import add_lineage_commands

    add_lineage_commands(runs, add, _client)
