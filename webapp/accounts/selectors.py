"""Reads for accounts: which teams a user is in, and with what role."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet
from django.utils import timezone

from .models import ApiToken, Membership, Team

# Every API token starts with this, so a reader (or a secret scanner) can tell what it is.
TOKEN_PREFIX = "nl_"


def token_hash(raw_token: str) -> str:
    """The stored form of a token: sha256 of the whole token string."""
    return hashlib.sha256(raw_token.encode("utf-8")).hexdigest()


def teams_for_user(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Team]:
    """The teams a user belongs to (none for anonymous users)."""
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user)


def role_in_team(*, user: AbstractBaseUser | AnonymousUser, team: Team | int) -> str | None:
    """The user's role in a team, or None when they are not a member."""
    if not user.is_authenticated:
        return None
    team_id = team if isinstance(team, int) else team.pk
    return (
        Membership.objects.filter(user=user, team_id=team_id).values_list("role", flat=True).first()
    )


def memberships_for_user(*, user: AbstractBaseUser) -> QuerySet[Membership]:
    """The user's memberships with their teams, ordered by team name."""
    return Membership.objects.filter(user=user).select_related("team").order_by("team__name")


def _live(tokens: QuerySet[ApiToken]) -> QuerySet[ApiToken]:
    """The tokens among `tokens` that still sign in now: not revoked and not expired.

    The one statement of the rule, so the single, per-user and batched checks cannot drift apart.
    """
    now = timezone.now()
    return tokens.filter(revoked_at__isnull=True).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))


def tokens_live(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    """The user's tokens that still sign in: not revoked and not expired."""
    return _live(ApiToken.objects.filter(user=user))


def token_for_secret(*, raw_token: str) -> ApiToken | None:
    """The active token whose plaintext is `raw_token`, or None."""
    if not raw_token.startswith(TOKEN_PREFIX):
        return None
    token = (
        ApiToken.objects.select_related("user")
        .filter(token_hash=token_hash(raw_token), revoked_at__isnull=True)
        .first()
    )
    if token is None or (token.expires_at is not None and token.expires_at <= timezone.now()):
        return None
    return token


def token_is_live(*, token_id: int) -> bool:
    """Whether the token is neither revoked nor expired (an open stream asks this again)."""
    return _live(ApiToken.objects.filter(pk=token_id)).exists()


def live_token_ids(*, token_ids: Iterable[int]) -> set[int]:
    """The ids among `token_ids` of tokens that are neither revoked nor expired (one query).

    The batched form of token_is_live: a server process re-checks all its open streams' tokens at once.
    """
    return set(_live(ApiToken.objects.filter(pk__in=set(token_ids))).values_list("pk", flat=True))


def active_user_ids(*, user_ids: Iterable[int]) -> set[int]:
    """The ids among `user_ids` of users that exist and are active (one query; a disabled user's
    open streams close)."""
    return set(get_user_model().objects.filter(pk__in=set(user_ids), is_active=True).values_list("pk", flat=True))
