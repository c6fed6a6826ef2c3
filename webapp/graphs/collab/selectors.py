"""Reads for a graph's room: may this user join it, and may they write?"""

from __future__ import annotations

from typing import Any

CLOSE_UNAUTHENTICATED = 4401  # no user, an expired/revoked token, an inactive user
CLOSE_FORBIDDEN = 4403  # not a member of the graph's team (or no such graph: the same answer)


def collab_access(*, user: Any, token_id: int | None, graph_id: int) -> tuple[int | None, bool]:
    """(close code or None, read_only) for this user (and token) in graph `graph_id`'s room.

    Read-only: the viewer role, or a read-scope token. A team-bound token sees its team only
    (memberships_of). Asked on join and again while the room is open.
    """
    from webapp.accounts.models import ApiToken, Role, TokenScope
    from webapp.accounts.selectors import active_user_ids, live_token_ids, role_in_team

    from ..models import Graph

    if user is None or not getattr(user, "is_authenticated", False) or user.pk is None:
        return CLOSE_UNAUTHENTICATED, True
    if not active_user_ids(user_ids=[user.pk]):
        return CLOSE_UNAUTHENTICATED, True
    scope = None
    if token_id is not None:
        if not live_token_ids(token_ids=[token_id]):
            return CLOSE_UNAUTHENTICATED, True
        scope = ApiToken.objects.filter(pk=token_id).values_list("scope", flat=True).first()
    team_id = Graph.objects.filter(pk=graph_id).values_list("team_id", flat=True).first()
    role = role_in_team(user=user, team=team_id) if team_id is not None else None
    if role is None:
        return CLOSE_FORBIDDEN, True
    return None, role == Role.VIEWER or (token_id is not None and scope != TokenScope.WRITE)
