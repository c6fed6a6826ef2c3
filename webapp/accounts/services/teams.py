"""Writes for teams: create one, change the settings its admins own."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from webapp.audit.services import audit_record
from webapp.errors import DomainError

from ..models import Membership, Role, Team


@transaction.atomic
def team_create(*, name: str, creator: AbstractBaseUser | None = None) -> Team:
    """Create a team; its creator (if given) becomes its admin."""
    name = name.strip()
    if not name:
        raise DomainError("invalid", "A team needs a name.", field="name")
    if Team.objects.filter(name__iexact=name).exists():
        raise DomainError("duplicate", f'A team called "{name}" already exists.', field="name")
    team = Team.objects.create(name=name)
    if creator is not None:
        Membership.objects.create(team=team, user=creator, role=Role.ADMIN)
    audit_record(action="team.created", actor=creator, team=team, obj=team, after={"name": team.name})
    return team


def team_update(*, team: Team, production_needs_approval: bool | None = None) -> Team:
    """Change the settings a team's admins own (today: whether production moves need approval)."""
    fields = []
    if production_needs_approval is not None:
        team.production_needs_approval = bool(production_needs_approval)
        fields.append("production_needs_approval")
    if fields:
        team.save(update_fields=fields)
    return team
