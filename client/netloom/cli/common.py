"""What every command shares: exit statuses, the output (text or --json), the logged-in client,
tables, and the config given as files and --set."""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from netloom.client import Client
from netloom.config import login_load
from netloom.errors import NetloomError, NotLoggedIn

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
