"""`netloom datasets list|add-builtin|upload` (and the version commands of dataset_versions.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netloom.cli.common import EXIT_ERROR, EXIT_OK, Output, _client, _table
from netloom.errors import DatasetFailed, NetloomError


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


def add_datasets_commands(
    commands: Any,
    add: Callable[..., argparse.ArgumentParser],
    team_option: Callable[[argparse.ArgumentParser], None],
) -> None:
    """The `datasets` command group."""
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
    from netloom.cli.dataset_versions import add_dataset_version_commands

    add_dataset_version_commands(datasets, add, _client)
