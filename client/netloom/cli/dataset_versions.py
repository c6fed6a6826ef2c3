"""`netloom datasets versions|upload-version|diff|lineage`: a dataset's versions, what changed between two,
and which runs and models used one."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any


def _diff_text(diff: dict[str, Any]) -> list[str]:
    head = f"version {diff['from']['number']} ({diff['from']['digest'][:12]}) -> {diff['to']['number']} ({diff['to']['digest'][:12]})"
    if diff.get("kind") == "table":
        rows = diff["rows"]
        lines = [head, f"rows: {rows['before']} -> {rows['after']}: {rows['added']} added, {rows['removed']} removed"
                 + (f", {rows['changed']} changed (by {diff['key']})" if rows.get("changed") is not None else "")]
        columns = diff["columns"]
        for what in ("added", "removed"):
            if columns[what]:
                lines.append(f"columns {what}: {', '.join(columns[what])}")
        for moved in columns["retyped"]:
            lines.append(f"column {moved['column']}: {moved['before']} -> {moved['after']}")
        balance = diff.get("class_balance") or {}
        if balance.get("before") or balance.get("after"):
            lines.append(f"class balance ({balance.get('column')}): {json.dumps(balance.get('before'))} -> "
                         f"{json.dumps(balance.get('after'))}")
        return lines
    if diff.get("kind") == "archive":
        files = diff["files"]
        return [head, f"files: {files['before']} -> {files['after']}: {files['added']} added, {files['removed']} "
                f"removed, {files['changed']} changed"]
    return [head, "same bytes" if diff.get("same_bytes") else "the bytes differ"]


def add_dataset_version_commands(datasets: Any, add: Callable[..., argparse.ArgumentParser],
                                 client: Callable[[Any], Any]) -> None:
    """`versions`, `upload-version`, `diff` and `lineage` under the `datasets` group (`client(args)`: a
    logged-in Client)."""
    from netloom.cli.common import EXIT_OK, _table
    from netloom.cli.lineage import lineage_text

    def cmd_versions(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            versions = c.dataset_versions(args.dataset)
        rows = [{**v, "digest": v["digest"][:12], "created_by": (v.get("created_by") or {}).get("username"),
                 "rows": ((v.get("summary") or {}).get("rows") or {}).get("total")} for v in versions]
        out.result(versions, _table(rows, ["number", "status", "digest", "size", "rows", "runs", "created_by",
                                           "created_at"]))
        return EXIT_OK

    def cmd_upload_version(args: argparse.Namespace, out: Any) -> int:
        options = json.loads(args.options) if args.options else None
        with client(args) as c:
            version = c.dataset_version_upload(args.dataset, args.file, options=options)
        out.result(version, f"version {version['number']} of dataset {args.dataset}: {version['status']} "
                   f"(sha256 {version['digest'][:12]})")
        return EXIT_OK

    def cmd_diff(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            diff = c.dataset_diff(args.dataset, args.before, args.after, key=args.key)
        out.result(diff, _diff_text(diff))
        return EXIT_OK

    def cmd_lineage(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            answer = c.dataset_version_lineage(args.dataset, args.version, depth=args.depth)
        out.result(answer, lineage_text(answer))
        return EXIT_OK

    versions = add(datasets, "versions", cmd_versions, "a dataset's versions (number, digest, size, who)")
    versions.add_argument("dataset", type=int)
    upload = add(datasets, "upload-version", cmd_upload_version,
                 "upload a new version of a dataset (refused when the bytes equal an existing version)")
    upload.add_argument("dataset", type=int)
    upload.add_argument("file")
    upload.add_argument("--options", metavar="JSON", help="the version's options (default: the previous version's)")
    diff = add(datasets, "diff", cmd_diff, "what changed between two versions of a dataset")
    diff.add_argument("dataset", type=int)
    diff.add_argument("before", type=int, metavar="FROM")
    diff.add_argument("after", type=int, metavar="TO")
    diff.add_argument("--key", metavar="COLUMN", help="the column that identifies a row (else rows match by content)")
    lineage = add(datasets, "lineage", cmd_lineage,
                  "which runs and models used a dataset version: pinned runs, checkpoints, fine-tunes, models")
    lineage.add_argument("dataset", type=int)
    lineage.add_argument("version", type=int, metavar="N")
    lineage.add_argument("--depth", type=int, help="hops between runs (default 3)")
