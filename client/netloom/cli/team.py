"""`netloom team ...`: a team's members and invitations (team admins change them)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

ROLES = ["viewer", "editor", "admin"]


def add_team_commands(commands: Any, add: Callable[..., argparse.ArgumentParser],
                      team_option: Callable[[argparse.ArgumentParser], None], client: Callable[[Any], Any]) -> None:
    """The `team` command group (`client(args)` opens a logged-in Client)."""
    from netloom.cli.common import EXIT_OK, _table

    def cmd_members(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            members = c.team_members(team=args.team)
        out.result(members, _table(members, ["id", "username", "role"]))
        return EXIT_OK

    def cmd_invite(args: argparse.Namespace, out: Any) -> int:
        from netloom.errors import NetloomError

        who = args.who.strip()
        if not who:
            raise NetloomError("give an e-mail address or a username to invite")
        by = {"email": who} if "@" in who else {"username": who}
        with client(args) as c:
            made = c.invite(role=args.role, team=args.team, **by)
        lines = [f"invited {who} as {made['role']} (until {made['expires_at']})",
                 f"accept link (works once; share it{'; also mailed' if made.get('mailed') else ''}):",
                 made["url"]]
        out.result(made, lines)
        return EXIT_OK

    def cmd_invitations(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            pending = c.invitations(team=args.team)
        rows = [{**i, "to": i["email"] or i["username"]} for i in pending]
        out.result(pending, _table(rows, ["id", "to", "role", "invited_by", "expires_at"]))
        return EXIT_OK

    def cmd_revoke(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            c.invitation_revoke(args.invitation, team=args.team)
        out.result({"id": args.invitation, "revoked": True}, f"invitation {args.invitation} revoked")
        return EXIT_OK

    def cmd_role(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            member = c.member_role(args.user, args.role, team=args.team)
        out.result(member, f"{member['username']} is now {member['role']}")
        return EXIT_OK

    def cmd_remove(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            c.member_remove(args.user, team=args.team)
        out.result({"user": args.user, "removed": True}, f"{args.user} removed from the team")
        return EXIT_OK

    team = commands.add_parser(
        "team", help="a team's members and invitations (admins invite, change roles, remove)"
    ).add_subparsers(dest="action", required=True, metavar="ACTION")
    team_option(add(team, "members", cmd_members, "the team's members and their roles"))
    invite = add(team, "invite", cmd_invite, "invite someone by e-mail or username; prints the accept link")
    invite.add_argument("who", help="an e-mail address or an existing username")
    invite.add_argument("--role", choices=ROLES, default="viewer")
    team_option(invite)
    team_option(add(team, "invitations", cmd_invitations, "the team's pending invitations"))
    revoke = add(team, "revoke", cmd_revoke, "revoke a pending invitation")
    revoke.add_argument("invitation", type=int, help="invitation id (see `team invitations`)")
    team_option(revoke)
    role = add(team, "role", cmd_role, "change a member's role (a team always keeps one admin)")
    role.add_argument("user", help="username or user id")
    role.add_argument("role", choices=ROLES)
    team_option(role)
    remove = add(team, "remove", cmd_remove, "remove a member (their open streams close)")
    remove.add_argument("user", help="username or user id")
    team_option(remove)
