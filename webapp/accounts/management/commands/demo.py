"""`manage.py demo`: the demo login (user demo / password demo, admin of team "Demo"). Idempotent."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from webapp.accounts.models import Role
from webapp.accounts.services.users import user_create

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo"
DEMO_TEAM = "Demo"


class Command(BaseCommand):
    help = "Create (or repair) the demo login: user demo / password demo, admin of team Demo."

    def handle(self, *args: Any, **options: Any) -> None:
        user_create(
            username=DEMO_USERNAME,
            password=DEMO_PASSWORD,
            team_name=DEMO_TEAM,
            role=Role.ADMIN,
            is_staff=True,
        )
        self.stdout.write(
            f"demo login: username {DEMO_USERNAME} / password {DEMO_PASSWORD} (team {DEMO_TEAM})"
        )
