"""`netloom audit TEAM ...`: who changed what in a team (team admins)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any


def change_text(entry: dict[str, Any]) -> str:
    """before -> after in one short line: only the keys that differ ("role: editor -> viewer")."""
    before, after = entry.get("before"), entry.get("after")
    if before is None and after is None:
        return ""
    if not isinstance(before, dict) or not isinstance(after, dict):
        side = after if after is not None else before
        return json.dumps(side, sort_keys=True, default=str) if after is not None else f"was {json.dumps(side, default=str)}"
    parts = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old != new:
            parts.append(f"{key}: {json.dumps(old, default=str)} -> {json.dumps(new, default=str)}")
    return "; ".join(parts)


def add_audit_command(commands: Any, add: Callable[..., argparse.ArgumentParser],
                      client: Callable[[Any], Any]) -> None:
    """The `audit` command (`client(args)` opens a logged-in Client)."""
    from netloom.cli.common import EXIT_OK, _table

    def cmd_audit(args: argparse.Namespace, out: Any) -> int:
        filters = {"actor": args.actor, "action": args.action, "object": args.object, "since": args.since,
                   "until": args.until}
        with client(args) as c:
            if args.jsonl:
                for line in c.audit_lines(args.team, **filters):
                    sys.stdout.write(line + "\n")
                return EXIT_OK
            entries = c.audit(args.team, limit=args.limit, **filters)
        rows = [{**e, "object": f"{e['object_type']}:{e['object_id']} {e['object_repr']}".strip(),
                 "change": change_text(e)} for e in entries]
        out.result(entries, _table(rows, ["at", "actor_name", "action", "object", "change"]))
        return EXIT_OK

    audit = add(commands, "audit", cmd_audit, "a team's audit log, newest first (team admins)")
    audit.add_argument("team", type=int, help="team id")
    audit.add_argument("--actor", metavar="USERNAME")
    audit.add_argument("--action", help='an action (run.cancelled) or a prefix ending in "." (member.)')
    audit.add_argument("--object", metavar="TYPE:ID", help="run:42, graph:7, member:3, or a type alone")
    audit.add_argument("--since", metavar="ISO", help="2026-01-31 or 2026-01-31T12:00:00Z")
    audit.add_argument("--until", metavar="ISO", help="before this (a date alone: through that day)")
    audit.add_argument("--limit", type=int, default=200, help="most entries to show (default 200)")
    audit.add_argument("--jsonl", action="store_true", help="every matching entry as JSON lines (streamed)")
