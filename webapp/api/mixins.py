"""TeamScopedMixin: the one base every team-owned endpoint uses.

Usage (any GenericAPIView / GenericViewSet):

    class RunViewSet(TeamScopedMixin, viewsets.ModelViewSet):
        queryset = Run.objects.all()
        team_lookup = "team"          # ORM path from the model to its Team ("graph__team" ...)
        write_role = Role.EDITOR      # role needed for POST/PUT/PATCH/DELETE (default editor)

What it guarantees:
- the queryset only ever contains objects of the requesting user's teams, so a foreign id
  is a 404 exactly like a missing one (nothing leaks);
- `?team=<id>` narrows a list to one team (a bad id is a 400, a foreign one an empty list);
- writes on an object need `write_role` in its team (403 otherwise; reads need membership);
- `team_for_write(team_id)` resolves the team of a new object: 400 when the id is not one
  of the user's teams (same answer as a missing team), 403 when the role is too low.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Model, QuerySet
from rest_framework import exceptions, permissions

from webapp.accounts.models import Role, Team, role_at_least
from webapp.accounts.selectors import memberships_of, team_ids_for_user
from webapp.api.serializers import ID_MAX

from .permissions import HasTeamRole


def scope_to_user_teams(
    queryset: QuerySet, *, user: AbstractBaseUser | AnonymousUser, team_lookup: str = "team"
) -> QuerySet:
    """Keep only the objects whose team (reached through `team_lookup`) has `user` as a member."""
    if not user.is_authenticated:
        return queryset.none()
    return queryset.filter(**{f"{team_lookup}__in": team_ids_for_user(user=user)})


def object_team_id(obj: Model, team_lookup: str = "team") -> int:
    """Follow `team_lookup` ("team", "graph__team") from an object to its team's id."""
    *path, last = team_lookup.split("__")
    for name in path:
        obj = getattr(obj, name)
    return getattr(obj, f"{last}_id")


def parse_team_id(value: Any, field: str = "team") -> int:
    """A team id from a request value, or a 400 naming the field."""
    try:
        team_id = int(value)
    except (TypeError, ValueError):
        raise exceptions.ValidationError({field: ["A team id (integer) is required."]}) from None
    if not 1 <= team_id <= ID_MAX:  # a larger number names no row (and SQLite cannot bind it)
        raise exceptions.ValidationError({field: ["A team id (integer) is required."]})
    return team_id


class TeamScopedMixin:
    """Scopes querysets to the user's teams and checks the team role for writes."""

    team_lookup: str = "team"
    write_role: str = Role.EDITOR
    permission_classes = [permissions.IsAuthenticated, HasTeamRole]

    request: Any  # provided by the view

    def get_queryset(self) -> QuerySet:
        """The view's queryset limited to the user's teams (and to `?team=` when given)."""
        queryset = scope_to_user_teams(
            super().get_queryset(),  # type: ignore[misc]
            user=self.request.user,
            team_lookup=self.team_lookup,
        )
        team_param = self.request.query_params.get("team")
        if team_param not in (None, ""):
            queryset = queryset.filter(**{self.team_lookup: parse_team_id(team_param)})
        return queryset

    def get_object_team(self, obj: Model) -> int:
        """The id of the team that owns `obj` (used by HasTeamRole)."""
        return object_team_id(obj, self.team_lookup)

    def team_for_write(self, team_id: Any, *, role: str | None = None, field: str = "team") -> Team:
        """The team a new object goes into, after checking the user's role there."""
        team_id = parse_team_id(team_id, field)
        membership = (
            memberships_of(user=self.request.user).select_related("team").filter(team_id=team_id).first()
        )
        if membership is None:
            raise exceptions.ValidationError({field: [f"No team {team_id} among your teams."]})
        if not role_at_least(membership.role, role or self.write_role):
            raise exceptions.PermissionDenied(
                f"Your role in team {membership.team.name} ({membership.role}) does not allow this."
            )
        return membership.team

    def require_role(self, team_id: int, role: str) -> None:
        """403 unless the user has at least `role` in team `team_id` (use for nested writes)."""
        from webapp.accounts.selectors import role_in_team

        if not role_at_least(role_in_team(user=self.request.user, team=team_id), role):
            raise exceptions.PermissionDenied("Your role in this team does not allow this.")
