"""`netloom login`, `netloom tokens`, `netloom teams`: sign in, the user's tokens and teams."""

from __future__ import annotations

import argparse
import getpass
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from netloom.cli.common import EXIT_OK, Output, _client, _table
from netloom.client import Client
from netloom.config import login_save

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


def add_account_commands(commands: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """The `login`, `tokens` and `teams` commands."""
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
