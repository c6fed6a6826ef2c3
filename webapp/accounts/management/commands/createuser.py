"""`manage.py createuser USERNAME --password P [--team NAME --role admin] [--staff]`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.accounts.models import Role
from webapp.accounts.services.users import user_create


class Command(BaseCommand):
    help = "Create a user (or reset their password), optionally in a team with a role."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--password", required=True)
        parser.add_argument("--team", help="team name; created if it does not exist")
        parser.add_argument("--role", choices=Role.values, default=Role.ADMIN)
        parser.add_argument("--staff", action="store_true", help="also give access to /admin/")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["password"]:
            raise CommandError("--password must not be empty")
        user = user_create(
            username=options["username"],
            password=options["password"],
            team_name=options["team"],
            role=options["role"],
            is_staff=options["staff"],
        )
        where = f" in team {options['team']} as {options['role']}" if options["team"] else ""
        self.stdout.write(f"user {user.get_username()} ready{where}")
