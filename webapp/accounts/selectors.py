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

from .models import ApiToken, Invitation, Membership, Team, TokenScope

# Every API token starts with this, so a reader (or a secret scanner) can tell what it is.
TOKEN_PREFIX = "nl_"
# And every invitation secret with this (it is no API token: it only accepts one invitation).
INVITATION_PREFIX = "nli_"

# Methods a read token may use anywhere; anything else only where the handler only reads
# (webapp/api/authentication.py `reads_only`, the model server's inference).
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

# The attribute a request's (or a stream's) user carries when it signed in with a team-bound
# token: every team lookup below narrows to that team, so no view has to know about tokens.
TOKEN_TEAM_ATTR = "netloom_token_team_id"


def token_hash(raw_token: str) -> str:
    """The stored form of a token: sha256 of the whole token string."""
    return hashlib.sha256(raw_token.encode("utf-8")).hexdigest()


def user_for_token(token: ApiToken) -> Any:
    """The token's user, marked with the token's team when it is team-bound (see TOKEN_TEAM_ATTR)."""
    user = token.user
    setattr(user, TOKEN_TEAM_ATTR, token.team_id)
    return user


def token_team_id(user: Any) -> int | None:
    """The one team the user's credentials are bound to (a team-bound token), or None (all theirs)."""
    return getattr(user, TOKEN_TEAM_ATTR, None)


def memberships_of(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Membership]:
    """The user's memberships that the request may use: all of them, or the token's team's only.

    Every "which teams may this user see" question goes through here (teams_for_user,
    role_in_team, TeamScopedMixin, the runs selectors), so a team-bound token narrows them all.
    """
    if not user.is_authenticated:
        return Membership.objects.none()
    memberships = Membership.objects.filter(user=user)
    bound = token_team_id(user)
    return memberships if bound is None else memberships.filter(team_id=bound)


def team_ids_for_user(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Membership]:
    """The ids of the teams the user may use, as a subquery (`team__in=team_ids_for_user(...)`)."""
    return memberships_of(user=user).values("team_id")


def teams_for_user(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Team]:
    """The teams a user belongs to (none for anonymous users; one for a team-bound token)."""
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(pk__in=team_ids_for_user(user=user))


def role_in_team(*, user: AbstractBaseUser | AnonymousUser, team: Team | int) -> str | None:
    """The user's role in a team, or None when they are not a member (or their token is bound
    to another team)."""
    team_id = team if isinstance(team, int) else team.pk
    return memberships_of(user=user).filter(team_id=team_id).values_list("role", flat=True).first()


def memberships_for_user(*, user: AbstractBaseUser) -> QuerySet[Membership]:
    """The user's memberships with their teams, ordered by team name."""
    return memberships_of(user=user).select_related("team").order_by("team__name")


def token_allows(token: ApiToken | None, *, method: str, team_id: int | None = None,
                 reads: bool = False) -> bool:
    """Whether the token's scope and team let it make this request.

    `method` is the HTTP method; `reads` says the handler only reads whatever the method (an
    inference POST: a read of the model); `team_id` is the team the request touches (None: no
    one team). A session (no token) is allowed: only the user's roles apply. Checked once per
    request by the API's authentication; the model server asks the same.
    """
    if token is None:
        return True
    if token.team_id is not None and team_id is not None and team_id != token.team_id:
        return False
    return token.scope == TokenScope.WRITE or reads or method.upper() in READ_METHODS


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


def token_find(*, raw_token: str) -> ApiToken | None:
    """The token whose plaintext is `raw_token`, its user loaded, revoked or expired too; None
    when there is none. Live ones are kept in the cache; the caller judges the state
    (token_for_secret, or the API's authentication, which names the reason of a refusal)."""
    if not raw_token.startswith(TOKEN_PREFIX):
        return None
    digest = token_hash(raw_token)
    key = token_cache_key(digest)
    kept = cache.get(key)
    if kept is not None:
        token = _instance(ApiToken, kept["token"])
        token.user = _instance(get_user_model(), kept["user"])
        return token
    token = ApiToken.objects.select_related("user").filter(token_hash=digest).first()
    if token is None or token.revoked_at is not None:
        return token
    seconds = TOKEN_CACHE_SECONDS
    if token.expires_at is not None:
        seconds = min(seconds, int((token.expires_at - timezone.now()).total_seconds()))
    if seconds > 0:
        cache.set(key, {"token": _values(token), "user": _values(token.user, frozenset({"password"}))},
                  seconds)
    return token


def token_expired(token: ApiToken) -> bool:
    """Whether the token's expiry has passed (checked on every use: the cache may outlive it)."""
    return token.expires_at is not None and token.expires_at <= timezone.now()


def token_for_secret(*, raw_token: str) -> ApiToken | None:
    """The unrevoked, unexpired token whose plaintext is `raw_token`, its user loaded, or None."""
    token = token_find(raw_token=raw_token)
    if token is None or token.revoked_at is not None or token_expired(token):
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
