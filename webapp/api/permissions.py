"""Role checks shared by every team-owned endpoint."""

from __future__ import annotations

from typing import Any

from rest_framework import permissions
from rest_framework.request import Request

from webapp.accounts.models import Role, role_at_least
from webapp.accounts.selectors import role_in_team


class HasTeamRole(permissions.BasePermission):
    """Object permission: reading needs membership, writing needs the view's `write_role`.

    The view names how to reach the team with `get_object_team(obj)` (TeamScopedMixin does).
    Non-members never get here for objects: the scoped queryset already answered 404.
    """

    message = "Your role in this team does not allow this."

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        """Check the user's role in the object's team against the action."""
        team = view.get_object_team(obj)
        role = role_in_team(user=request.user, team=team)
        if request.method in permissions.SAFE_METHODS:
            return role is not None
        return role_at_least(role, getattr(view, "write_role", Role.EDITOR))
