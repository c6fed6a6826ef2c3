"""Writes for API tokens: create (scoped, team-bound, expiring), revoke, forget the kept
lookups, record use."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from webapp.audit.services import audit_record
from webapp.errors import Conflict, DomainError

from ..events import access_changed
from ..models import ApiToken, Membership, Team, TokenScope
from ..selectors import TOKEN_PREFIX, token_cache_key, token_hash, tokens_live
from ..selectors import token_team_id as _token_team_id

MAX_TOKEN_DAYS = 3650


def _token_team(*, user: AbstractBaseUser, team: int | str | None) -> Team | None:
    """The team a new token is bound to: one of the user's teams, by id or name, or a 400 naming
    `team`. A user signed in with a team-bound token binds new tokens to that team only."""
    bound = _token_team_id(user)
    if team is None or team == "":
        if bound is None:
            return None
        team = bound
    memberships = Membership.objects.filter(user=user).select_related("team")
    if isinstance(team, int) or str(team).isdigit():
        membership = memberships.filter(team_id=int(team)).first()
    else:
        membership = memberships.filter(team__name__iexact=str(team).strip()).first()
    if membership is None:
        raise DomainError("invalid", f"team: No team {team!r} among your teams.",
                          fields={"team": [f"No team {team!r} among your teams."]})
    if bound is not None and membership.team_id != bound:
        raise DomainError("invalid", f"team: This token is bound to team {bound}; a token it makes is too.",
                          fields={"team": [f"Must be team {bound}, the team of the token you signed in with."]})
    return membership.team


def _token_expiry(*, expires_in_days: int | None, expires_at: datetime | None) -> datetime | None:
    """When a new token expires: `expires_at` (in the future, within MAX_TOKEN_DAYS), or in
    `expires_in_days` days, or never; a 400 naming the field otherwise."""
    now = timezone.now()
    if expires_in_days is not None and expires_at is not None:
        raise DomainError("invalid", "Give expires_at or expires_in_days, not both.",
                          fields={"expires_at": ["Give expires_at or expires_in_days, not both."]})
    if expires_in_days is not None:
        if not 1 <= expires_in_days <= MAX_TOKEN_DAYS:
            raise DomainError(
                "invalid",
                f"expires_in_days must be between 1 and {MAX_TOKEN_DAYS}.",
                field="expires_in_days",
            )
        return now + timedelta(days=expires_in_days)
    if expires_at is not None:
        if timezone.is_naive(expires_at):
            raise DomainError("invalid", "expires_at: give a time zone (e.g. 2030-01-01T00:00:00Z).",
                              fields={"expires_at": ["Needs a time zone, e.g. 2030-01-01T00:00:00Z."]})
        if expires_at <= now:
            raise DomainError("invalid", f"expires_at: {expires_at.isoformat()} is not in the future.",
                              fields={"expires_at": ["Must be in the future."]})
        if expires_at > now + timedelta(days=MAX_TOKEN_DAYS):
            raise DomainError("invalid", f"expires_at: at most {MAX_TOKEN_DAYS} days from now.",
                              fields={"expires_at": [f"At most {MAX_TOKEN_DAYS} days from now."]})
    return expires_at


def token_create(
    *,
    user: AbstractBaseUser,
    name: str = "",
    expires_in_days: int | None = None,
    expires_at: datetime | None = None,
    scope: str = TokenScope.WRITE,
    team: int | str | None = None,
) -> tuple[ApiToken, str]:
    """Create an API token; returns the row and the plaintext, which is never stored.

    `scope` "read" or "write"; `team` (an id or a name of one of the user's teams) binds it to
    that team; `expires_at` (future) or `expires_in_days` ends it. Each is a 400 naming the field
    when wrong.

    Refused (Conflict "too_many_tokens", 409) while the user already has
    NETLOOM_MAX_TOKENS_PER_USER live tokens: a script that signs in on every run would otherwise
    pile up secrets without bound. The count is taken with the user's row locked, so two
    concurrent sign-ins cannot both pass the last free place.
    """
    if scope not in TokenScope.values:
        raise DomainError("invalid", f"scope: one of {', '.join(TokenScope.values)}.",
                          fields={"scope": [f"One of {', '.join(TokenScope.values)}."]})
    expiry = _token_expiry(expires_in_days=expires_in_days, expires_at=expires_at)
    bound_team = _token_team(user=user, team=team)
    limit = int(settings.NETLOOM_MAX_TOKENS_PER_USER)
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        if tokens_live(user=user).count() >= limit:
            raise Conflict(
                "too_many_tokens",
                f"You already have {limit} live API tokens, the most one user may hold "
                "(NETLOOM_MAX_TOKENS_PER_USER). Revoke one you no longer use first: "
                "GET /api/auth/tokens/ lists them, DELETE /api/auth/tokens/<id>/ revokes one.",
                extra={"limit": limit},
            )
        token = ApiToken.objects.create(
            user=user,
            name=name.strip()[:100],
            prefix=raw[: len(TOKEN_PREFIX) + 8],
            token_hash=token_hash(raw),
            expires_at=expiry,
            scope=scope,
            team=bound_team,
        )
        # A personal token belongs to no team: a site-level entry. Never the secret: name, prefix, expiry.
        # A personal token: a site-level entry, or its team's when bound to one. Never the secret.
        audit_record(action="token.created", actor=user, team=bound_team, obj=token, object_type="token",
                     object_repr=_token_repr(token),
                     after={"name": token.name, "prefix": token.prefix, "expires_at": token.expires_at,
                            "scope": token.scope, "team": bound_team.pk if bound_team else None})
    return token, raw


def _token_repr(token: ApiToken) -> str:
    return f"{token.name or 'token'} ({token.prefix}…)"


def token_revoke(*, token: ApiToken, actor: AbstractBaseUser | None = None) -> None:
    """Revoke a token (kept for the audit trail, never accepted again); `actor`: who revoked it."""
    if token.revoked_at is None:
        with transaction.atomic():
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            audit_record(action="token.revoked", actor=actor, team=None, obj=token, object_type="token",
                         object_repr=_token_repr(token), before={"revoked_at": None},
                         after={"revoked_at": token.revoked_at})
            token_forget(digests=[token.token_hash])
            access_changed(user_id=token.user_id)


def token_forget(*, digests: list[str]) -> None:
    """Drop the kept lookups of these tokens (selectors.token_for_secret): now, and again once the
    transaction commits, so a request that read the old row in between cannot keep it."""
    keys = [token_cache_key(digest) for digest in digests]
    if not keys:
        return
    cache.delete_many(keys)
    transaction.on_commit(lambda: cache.delete_many(keys), robust=True)


def user_tokens_forget(*, user_id: int) -> None:
    """Drop the kept lookups of every token of the user (a change to the user: disabled, renamed)."""
    token_forget(digests=list(ApiToken.objects.filter(user_id=user_id).values_list("token_hash", flat=True)))


def token_touch(*, token: ApiToken) -> None:
    """Record use of a token, at most once a minute (a write per request is wasteful)."""
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
        token_forget(digests=[token.token_hash])  # the kept copy says the old time
