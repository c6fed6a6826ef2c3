"""Writes for accounts: teams, memberships, users and API tokens."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from webapp.audit.services import audit_record
from webapp.errors import Conflict, DomainError

from .events import access_changed
from .models import ApiToken, Membership, Role, Team

# token_hash and TOKEN_PREFIX live in selectors (the token lookup hashes with them); named
# here too for callers that create tokens.
from .selectors import TOKEN_PREFIX, token_cache_key, token_hash, tokens_live

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
    audit_record(action="team.created", actor=creator, team=team, obj=team, after={"name": team.name})
    return team


def _member_ref(user: AbstractBaseUser) -> dict[str, object]:
    """The audit log's object for a membership: the member (type "member", the user's id)."""
    return {"object_type": "member", "object_id": user.pk, "object_repr": user.get_username()}


@transaction.atomic
def membership_add(
    *, team: Team, user: AbstractBaseUser, role: str, actor: AbstractBaseUser | None = None
) -> Membership:
    """Add a user to a team, or change their role if they are already a member.

    `actor` is who did it (None: a command), for the audit log."""
    if role not in Role.values:
        raise DomainError("invalid", f'Unknown role "{role}".', field="role")
    membership, created = Membership.objects.select_for_update().get_or_create(
        team=team, user=user, defaults={"role": role}
    )
    if created:
        audit_record(action="member.added", actor=actor, team=team, **_member_ref(user), after={"role": role})
    elif membership.role != role:
        if membership.role == Role.ADMIN:
            _ensure_another_admin(team=team, leaving=membership)
        before = membership.role
        membership.role = role
        membership.save(update_fields=["role"])
        audit_record(action="member.role_changed", actor=actor, team=team, **_member_ref(user),
                     before={"role": before}, after={"role": role})
    return membership


@transaction.atomic
def membership_remove(*, team: Team, user: AbstractBaseUser, actor: AbstractBaseUser | None = None) -> None:
    """Remove a user from a team; the last admin cannot leave. `actor`: who did it (the audit log)."""
    membership = Membership.objects.select_for_update().filter(team=team, user=user).first()
    if membership is None:
        return
    if membership.role == Role.ADMIN:
        _ensure_another_admin(team=team, leaving=membership)
    membership.delete()
    audit_record(action="member.removed", actor=actor, team=team, **_member_ref(user),
                 before={"role": membership.role})
    access_changed(user_id=user.pk)


def _ensure_another_admin(*, team: Team, leaving: Membership) -> None:
    others = Membership.objects.filter(team=team, role=Role.ADMIN).exclude(pk=leaving.pk)
    if not others.exists():
        raise DomainError(
            "last_admin", "A team needs at least one admin; make someone else admin first."
        )


def token_create(
    *, user: AbstractBaseUser, name: str = "", expires_in_days: int | None = None
) -> tuple[ApiToken, str]:
    """Create an API token; returns the row and the plaintext, which is never stored.

    Refused (Conflict "too_many_tokens", 409) while the user already has
    NETLOOM_MAX_TOKENS_PER_USER live tokens: a script that signs in on every run would otherwise
    pile up secrets without bound. The count is taken with the user's row locked, so two
    concurrent sign-ins cannot both pass the last free place.
    """
    if expires_in_days is not None and not 1 <= expires_in_days <= MAX_TOKEN_DAYS:
        raise DomainError(
            "invalid",
            f"expires_in_days must be between 1 and {MAX_TOKEN_DAYS}.",
            field="expires_in_days",
        )
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
            expires_at=(timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None),
        )
        # A personal token belongs to no team: a site-level entry. Never the secret: name, prefix, expiry.
        audit_record(action="token.created", actor=user, team=None, obj=token, object_type="token",
                     object_repr=_token_repr(token),
                     after={"name": token.name, "prefix": token.prefix, "expires_at": token.expires_at})
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
