"""Writes for accounts: teams, memberships, users and API tokens."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from webapp.errors import Conflict, DomainError

from .events import access_changed
from .models import ApiToken, Membership, Role, Team, TokenScope

# token_hash and TOKEN_PREFIX live in selectors (the token lookup hashes with them); named
# here too for callers that create tokens.
from .selectors import TOKEN_PREFIX, token_cache_key, token_hash, tokens_live
from .selectors import token_team_id as _token_team_id

MAX_TOKEN_DAYS = 3650


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


@transaction.atomic
def membership_add(*, team: Team, user: AbstractBaseUser, role: str) -> Membership:
    """Add a user to a team, or change their role if they are already a member."""
    if role not in Role.values:
        raise DomainError("invalid", f'Unknown role "{role}".', field="role")
    membership, created = Membership.objects.select_for_update().get_or_create(
        team=team, user=user, defaults={"role": role}
    )
    if not created and membership.role != role:
        if membership.role == Role.ADMIN:
            _ensure_another_admin(team=team, leaving=membership)
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def membership_remove(*, team: Team, user: AbstractBaseUser) -> None:
    """Remove a user from a team; the last admin cannot leave."""
    membership = Membership.objects.select_for_update().filter(team=team, user=user).first()
    if membership is None:
        return
    if membership.role == Role.ADMIN:
        _ensure_another_admin(team=team, leaving=membership)
    membership.delete()
    access_changed(user_id=user.pk)


def _ensure_another_admin(*, team: Team, leaving: Membership) -> None:
    others = Membership.objects.filter(team=team, role=Role.ADMIN).exclude(pk=leaving.pk)
    if not others.exists():
        raise DomainError(
            "last_admin", "A team needs at least one admin; make someone else admin first."
        )


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
    return token, raw


def token_revoke(*, token: ApiToken) -> None:
    """Revoke a token (kept for the audit trail, never accepted again)."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
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


@transaction.atomic
def user_create(
    *,
    username: str,
    password: str,
    team_name: str | None = None,
    role: str = Role.ADMIN,
    is_staff: bool = False,
) -> AbstractBaseUser:
    """Create a user (or reset an existing one's password) and optionally put them in a team."""
    User = get_user_model()
    user, _ = User.objects.get_or_create(username=username)
    user.set_password(password)
    if is_staff:
        user.is_staff = True
        user.is_superuser = True
    user.save()
    if team_name:
        team = Team.objects.filter(name__iexact=team_name).first() or team_create(name=team_name)
        membership_add(team=team, user=user, role=role)
    return user
