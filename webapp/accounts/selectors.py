"""Reads for accounts: which teams a user is in, and with what role."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS
from django.db.models import Q, QuerySet
from django.utils import timezone

from .models import ApiToken, Invitation, Membership, Team

# Every API token starts with this, so a reader (or a secret scanner) can tell what it is.
TOKEN_PREFIX = "nl_"
# And every invitation secret with this (it is no API token: it only accepts one invitation).
INVITATION_PREFIX = "nli_"


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


# A live token and its user, kept briefly in Django's cache (shared by the web processes) by the
# token's hash: a signed-in request needs no statement for them. token_revoke and every save of
# the user delete the entry at once (services.token_forget); expiry is checked on every use.
TOKEN_CACHE_SECONDS = 60


def token_cache_key(digest: str) -> str:
    """Where the token with this hash is kept in the cache."""
    return f"token:{digest}"


def _values(instance: Any, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    """An instance's concrete fields as JSON values (the cache stores JSON, webapp/cache.py)."""
    out = {}
    for field in instance._meta.concrete_fields:
        if field.attname in skip:
            continue
        value = getattr(instance, field.attname)
        out[field.attname] = value.isoformat() if isinstance(value, datetime) else value
    return out


def _instance(model: Any, values: dict[str, Any]) -> Any:
    """The instance `_values` described; fields left out (the password) load on first use."""
    fields = [f for f in model._meta.concrete_fields if f.attname in values]
    return model.from_db(DEFAULT_DB_ALIAS, [f.attname for f in fields],
                         [f.to_python(values[f.attname]) for f in fields])


def token_for_secret(*, raw_token: str) -> ApiToken | None:
    """The unrevoked, unexpired token whose plaintext is `raw_token`, its user loaded, or None."""
    if not raw_token.startswith(TOKEN_PREFIX):
        return None
    digest = token_hash(raw_token)
    key = token_cache_key(digest)
    kept = cache.get(key)
    if kept is not None:
        token = _instance(ApiToken, kept["token"])
        token.user = _instance(get_user_model(), kept["user"])
    else:
        token = ApiToken.objects.select_related("user").filter(token_hash=digest, revoked_at__isnull=True).first()
        if token is None:
            return None
        seconds = TOKEN_CACHE_SECONDS
        if token.expires_at is not None:
            seconds = min(seconds, int((token.expires_at - timezone.now()).total_seconds()))
        if seconds > 0:
            cache.set(key, {"token": _values(token), "user": _values(token.user, frozenset({"password"}))},
                      seconds)
    if token.expires_at is not None and token.expires_at <= timezone.now():
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


def invitations_pending(*, team: Team) -> QuerySet[Invitation]:
    """The team's invitations that can still be accepted, newest first."""
    return (Invitation.objects.filter(team=team, accepted_at__isnull=True, revoked_at__isnull=True,
                                      expires_at__gt=timezone.now())
            .select_related("invited_by").order_by("-created_at", "-id"))


def invitation_for_secret(*, raw_token: str, for_update: bool = False) -> Invitation | None:
    """The invitation (any state) whose secret is `raw_token`, its team and inviter loaded, or None."""
    if not raw_token.startswith(INVITATION_PREFIX):
        return None
    rows = Invitation.objects.select_related("team", "invited_by")
    if for_update:
        rows = rows.select_for_update(of=("self",))
    return rows.filter(token_hash=token_hash(raw_token)).first()
