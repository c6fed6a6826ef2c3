"""The `netloom` command: the service from a terminal or a CI job (`netloom --help`).

Every command takes `--json` (one JSON document on stdout, nothing else there). Errors print the
service's message and fields on stderr, never a traceback. Exit status: 0 done (a followed run
succeeded), 1 an error (the service refused, or could not be reached), 2 a usage error, 3 the
followed run failed, 4 it was cancelled.
"""

from __future__ import annotations

import argparse
import getpass
import json
import re
import sys
import tomllib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from netloom.client import Client
from netloom.config import login_load, login_save
from netloom.errors import ApiError, DatasetFailed, NetloomError, NotLoggedIn

EXIT_OK, EXIT_ERROR, EXIT_RUN_FAILED, EXIT_RUN_CANCELLED = 0, 1, 3, 4
# What the live bar shows of the latest metrics (all of them print at the end).
BAR_METRICS = ("/loss", "/accuracy", "/mae", "/r2")
RUN_EXIT = {"succeeded": EXIT_OK, "failed": EXIT_RUN_FAILED, "cancelled": EXIT_RUN_CANCELLED}


class Output:
    """Where a command writes: text for people, or one JSON document with --json."""

    def __init__(self, as_json: bool) -> None:
        self.json = as_json

    def result(self, value: Any, text: str | list[str]) -> None:
        if self.json:
            print(json.dumps(value, indent=2, default=str))
        else:
            print(text if isinstance(text, str) else "\n".join(text))

    def note(self, text: str) -> None:
        """Human progress lines go to stderr, so stdout stays the answer."""
        print(text, file=sys.stderr)


# --- helpers ----------------------------------------------------------------------------------


def _client(args: argparse.Namespace) -> Client:
    login = login_load()
    url = args.url or (login.url if login else None)
    token = args.token or (login.token if login else None)
    if not url or not token:
        raise NotLoggedIn(
            "not logged in: run `netloom login URL` (or set NETLOOM_URL and NETLOOM_TOKEN)"
        )
    return Client(url, token)


def _table(rows: Sequence[Mapping[str, Any]], columns: list[str]) -> list[str]:
    cells = [
        [str(row.get(column, "") if row.get(column) is not None else "") for column in columns]
        for row in rows
    ]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return lines if rows else ["(none)"]


def _metrics_text(values: dict[str, Any] | None) -> str:
    if not values:
        return ""
    parts = []
    for key, value in sorted(values.items()):
        parts.append(f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}")
    return " ".join(parts)


def parse_set(assignments: Sequence[str]) -> dict[str, Any]:
    """`optimizer.lr=0.01` -> {"optimizer": {"lr": 0.01}} (values read as JSON, else text)."""
    config: dict[str, Any] = {}
    for assignment in assignments:
        key, sep, raw = assignment.partition("=")
        if not sep or not key:
            raise NetloomError(
                f"--set takes KEY=VALUE (dotted keys for nested fields), not {assignment!r}"
            )
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        node = config
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise NetloomError(f"--set {key}: {part} is not a group of fields")
        node[leaf] = value
    return config


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        merged[key] = (
            _merge(merged[key], value)
            if isinstance(value, dict) and isinstance(merged.get(key), dict)
            else value
        )
    return merged


def _read_config(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    file = Path(path)
    try:
        config = (
            tomllib.loads(file.read_text())
            if file.suffix == ".toml"
            else json.loads(file.read_text())
        )
    except (OSError, ValueError) as exc:
        raise NetloomError(f"cannot read the config file {path}: {exc}") from None
    if not isinstance(config, dict):
        raise NetloomError(f"the config file {path} must hold an object of training config fields")
    return config


# --- commands ---------------------------------------------------------------------------------


EXPIRY_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def expiry_time(value: str, *, now: datetime | None = None) -> datetime:
    """`--expires`: a span from now (`90m`, `12h`, `30d`, `2w`) or a date/time (`2030-01-31`,
    `2030-01-31T12:00:00+01:00`; without a zone: UTC), as an aware datetime."""
    now = now or datetime.now(UTC)
    span = re.fullmatch(r"\s*(\d+)\s*([mhdw])\s*", value)
    if span:
        return now + timedelta(**{EXPIRY_UNITS[span.group(2)]: int(span.group(1))})
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r}: a span like 30d, 12h, 90m, 2w, or a date like 2030-01-31"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _team_ref(value: str) -> int | str:
    return int(value) if value.isdigit() else value


def cmd_login(args: argparse.Namespace, out: Output) -> int:
    interactive = sys.stdin.isatty()
    username = args.username or (
        input("Username: ") if interactive else sys.stdin.readline().strip()
    )
    if interactive:
        password = getpass.getpass("Password: ")
    else:  # a script pipes it: `printf 'me\npw\n' | netloom login URL`
        password = sys.stdin.readline().rstrip("\n")
    client, token = Client.login(
        args.login_url, username, password, scope=args.scope, team=args.login_team, expires_at=args.expires
    )
    client.close()
    path = login_save(url=args.login_url.rstrip("/"), token=token["token"])
    limits = [f"scope {token['scope']}"]
    if token.get("team") is not None:
        limits.append(f"team {token.get('team_name')}")
    limits.append(f"expires {token['expires_at']}" if token.get("expires_at") else "no expiry")
    out.result(
        {"url": args.login_url, "user": username, "token_id": token["id"], "config": str(path),
         "scope": token["scope"], "team": token.get("team"), "expires_at": token.get("expires_at")},
        f"logged in to {args.login_url} as {username} (token {token['prefix']}..., "
        f"{', '.join(limits)}; saved in {path})",
    )
    return EXIT_OK


def cmd_tokens(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        tokens = client.tokens()
    rows = [{**token, "team": token.get("team_name") or "all", "expires_at": token.get("expires_at") or "never"}
            for token in tokens]
    out.result(tokens, _table(rows, ["id", "name", "prefix", "scope", "team", "expires_at", "last_used_at",
                                     "revoked_at"]))
    return EXIT_OK


def cmd_teams(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        teams = client.teams()
    out.result(teams, _table(teams, ["id", "name", "role"]))
    return EXIT_OK


def cmd_datasets_list(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        datasets = client.datasets(team=args.team)
    out.result(datasets, _table(datasets, ["id", "team", "name", "kind", "status", "needs"]))
    return EXIT_OK


def _dataset_text(dataset: dict[str, Any]) -> list[str]:
    summary = dataset.get("summary") or {}
    lines = [
        f'dataset {dataset["id"]} "{dataset["name"]}": {dataset["status"]}'
        + (
            " (trainable)"
            if dataset.get("trainable")
            else f" (not trainable: it needs a {dataset.get('needs')}, e.g. upload with --target COLUMN)"
            if dataset.get("needs")
            else ""
        )
    ]
    rows = summary.get("rows")
    if rows:
        # A fixed order (a PostgreSQL-backed service returns JSON keys in its own order).
        order = ["total", "train", "val", "test"]
        keys = [k for k in order if k in rows] + sorted(k for k in rows if k not in order)
        lines.append("  rows: " + ", ".join(f"{k} {rows[k]}" for k in keys))
    for key in ("task", "feature_shape", "num_classes", "target_name"):
        if summary.get(key) is not None:
            lines.append(f"  {key}: {summary[key]}")
    if summary.get("class_counts"):
        lines.append(
            "  classes: "
            + ", ".join(f"{k}={v}" for k, v in sorted(summary["class_counts"].items()))
        )
    for problem in summary.get("problems") or []:
        lines.append(
            f"  problem: {problem.get('message', problem) if isinstance(problem, dict) else problem}"
        )
    return lines


def cmd_datasets_add_builtin(args: argparse.Namespace, out: Output) -> int:
    with _client(args) as client:
        dataset = client.dataset_add_builtin(
            args.builtin, team=args.team, name=args.name, seed=args.seed
        )
    out.result(dataset, _dataset_text(dict(dataset)))
    return EXIT_OK


def cmd_datasets_upload(args: argparse.Namespace, out: Output) -> int:
    from tqdm import tqdm

    path = Path(args.file)
    if not path.is_file():
        raise NetloomError(f"no such file: {path}")
    with _client(args) as client:
        team = client.default_team(args.team)
        with tqdm(
            total=path.stat().st_size,
            unit="B",
            unit_scale=True,
            desc=f"upload {path.name}",
            file=sys.stderr,
            disable=out.json,
            leave=True,
        ) as bar:

            def sent(done: int, total: int) -> None:
                bar.update(done - bar.n)

            dataset = client.dataset_upload(
                path, team=team, target=args.target, kind=args.kind, name=args.name, progress=sent
            )
        if dataset["status"] == "processing" and not args.no_wait:
            with tqdm(
                total=100,
                unit="%",
                desc="processing",
                file=sys.stderr,
                disable=out.json,
                bar_format="{desc}: {percentage:3.0f}%|{bar}|",
            ) as bar:

                def moved(current: Any) -> None:
                    fraction = current.get("progress")
                    if fraction is not None:
                        bar.update(int(fraction * 100) - bar.n)

                try:
                    dataset = client.dataset_wait(dataset["id"], progress=moved)
                except DatasetFailed as failed:
                    bar.close()
                    return _dataset_failed(failed.dataset, out)
                bar.update(100 - bar.n)
    if dataset["status"] == "failed":
        return _dataset_failed(dict(dataset), out)
    out.result(dataset, _dataset_text(dict(dataset)))
    return EXIT_OK


def _dataset_failed(dataset: dict[str, Any], out: Output) -> int:
    failed = DatasetFailed(dataset)
    if out.json:
        out.result(dataset, "")
    else:
        print(f"error: dataset {dataset['id']} could not be read: {failed}", file=sys.stderr)
    return EXIT_ERROR


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


# --- the parser -------------------------------------------------------------------------------


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

    login = add(
        commands, "login", cmd_login, "ask for user and password, store an API token (mode 0600)"
    )
    login.add_argument("login_url", metavar="URL")
    login.add_argument("--username", "-u")
    login.add_argument("--scope", choices=["read", "write"],
                       help="read: GET, streams and predictions only (default: write)")
    login.add_argument("--team", dest="login_team", type=_team_ref, metavar="NAME|ID",
                       help="bind the token to one of your teams")
    login.add_argument("--expires", type=expiry_time, metavar="SPAN|DATE",
                       help="end the token: 30d, 12h, 90m, 2w, or 2030-01-31 (default: never)")
    add(commands, "tokens", cmd_tokens, "your API tokens with their scope, team and expiry")
    add(commands, "teams", cmd_teams, "your teams and your role in each")

    datasets = commands.add_parser("datasets", help="list, add or upload datasets").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    team_option(add(datasets, "list", cmd_datasets_list, "the datasets of your teams"))
    builtin = add(
        datasets,
        "add-builtin",
        cmd_datasets_add_builtin,
        "add a built-in dataset (iris, digits, ...)",
    )
    builtin.add_argument("builtin")
    builtin.add_argument("--name")
    builtin.add_argument("--seed", type=int)
    team_option(builtin)
    upload = add(
        datasets,
        "upload",
        cmd_datasets_upload,
        "upload a CSV, image zip or tensors file; waits until it is ready",
    )
    upload.add_argument("file")
    upload.add_argument("--target", help="the CSV column to predict")
    upload.add_argument(
        "--kind", choices=["csv", "images", "tensors"], help="default: from the file name"
    )
    upload.add_argument("--name")
    upload.add_argument(
        "--no-wait", action="store_true", help="return while the service still processes it"
    )
    team_option(upload)
    from netloom.cli_datasets import add_dataset_version_commands

    add_dataset_version_commands(datasets, add, _client)

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
    from netloom.cli_lineage import add_lineage_commands

    add_lineage_commands(runs, add, _client)

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
    from netloom.cli_models import add_model_commands

    add_model_commands(commands, add, team_option, _client)
    from netloom.cli_team import add_team_commands

    add_team_commands(commands, add, team_option, _client)

    from netloom.cli_audit import add_audit_command

    add_audit_command(commands, add, _client)
    explain = add(
        commands, "explain", cmd_explain, "why the model answered as it did on a test row"
    )
    explain.add_argument("run", type=int)
    explain.add_argument("--index", type=int, required=True, help="test-split row")
    explain.add_argument("--method", default="integrated_gradients")
    explain.add_argument("--target", type=int)
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


if __name__ == "__main__":
    sys.exit(main())
