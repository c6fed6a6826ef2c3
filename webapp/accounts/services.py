"""Writes for accounts: teams, memberships, users and API tokens."""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from webapp.errors import Conflict, DomainError

from .events import access_changed
from .models import ROLE_RANK, ApiToken, Membership, OidcIdentity, Role, Team

# token_hash and TOKEN_PREFIX live in selectors (the token lookup hashes with them); named
# here too for callers that create tokens.
from .selectors import TOKEN_PREFIX, token_cache_key, token_hash, tokens_live

MAX_TOKEN_DAYS = 3650

log = logging.getLogger(__name__)


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


# --- single sign-on ---------------------------------------------------------------------------

TeamMap = Mapping[str, Sequence[tuple[str, str]]]


def sso_sign_in(
    *,
    issuer: str,
    claims: Mapping[str, Any],
    groups_claim: str,
    team_map: TeamMap,
    create_users: bool,
) -> AbstractBaseUser:
    """The account an OpenID provider vouched for (its verified claims), with its memberships set
    from the groups claim.

    The account is found by the provider's (issuer, sub); at a first sign-in, by a verified
    e-mail that exactly one account has, else created (when `create_users`). Raises DomainError
    "sso_no_account" when there is none to use, "sso_claims" when `sub` is missing,
    "sso_inactive" for a disabled account.
    """
    subject = str(claims.get("sub") or "")
    if not subject:
        raise DomainError("sso_claims", "The sign-in provider sent no subject (sub) claim.")
    User = get_user_model()
    with transaction.atomic():
        identity = (
            OidcIdentity.objects.select_for_update().select_related("user")
            .filter(issuer=issuer, subject=subject).first()
        )
        if identity is not None:
            user = identity.user
        else:
            user = _sso_user_by_email(claims) or (
                _sso_user_create(claims) if create_users else None
            )
            if user is None:
                raise DomainError(
                    "sso_no_account",
                    "No Netloom account belongs to this sign-in, and this server does not create "
                    "accounts at sign-in (NETLOOM_OIDC_CREATE_USERS): ask an admin to invite you.",
                )
            identity = OidcIdentity.objects.create(user=user, issuer=issuer, subject=subject)
        if not user.is_active:
            raise DomainError("sso_inactive", "This account is disabled.")
        identity.last_sign_in_at = timezone.now()
        identity.save(update_fields=["last_sign_in_at"])
        email = claims.get("email")
        if isinstance(email, str) and claims.get("email_verified") is True and user.email != email:
            User.objects.filter(pk=user.pk).update(email=email)
            user.email = email
        memberships_sync_from_groups(
            user=user, groups=sso_groups(claims.get(groups_claim)), team_map=team_map
        )
    return user


def sso_groups(value: Any) -> list[str]:
    """The groups claim as a list of names (a provider may send a list or one string)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(item) for item in value if isinstance(item, str | int)]
    return []


def _sso_user_by_email(claims: Mapping[str, Any]) -> AbstractBaseUser | None:
    """The one existing account with this e-mail, when the provider says it verified it."""
    email = claims.get("email")
    if not isinstance(email, str) or not email or claims.get("email_verified") is not True:
        return None
    matches = list(get_user_model().objects.filter(email__iexact=email)[:2])
    return matches[0] if len(matches) == 1 else None


def _sso_user_create(claims: Mapping[str, Any]) -> AbstractBaseUser:
    """A new account named after preferred_username (else the e-mail's name), with no password."""
    User = get_user_model()
    email = claims.get("email") if isinstance(claims.get("email"), str) else ""
    base = str(claims.get("preferred_username") or (email.split("@")[0] if email else "") or "user")
    base = re.sub(r"[^\w.@+-]", "", base)[:140] or "user"
    username, n = base, 1
    while User.objects.filter(username__iexact=username).exists():
        n += 1
        username = f"{base}-{n}"
    user = User(username=username, email=email or "")
    for claim, field in (("given_name", "first_name"), ("family_name", "last_name")):
        if isinstance(claims.get(claim), str):
            setattr(user, field, claims[claim][:150])
    user.set_unusable_password()
    user.save()
    return user


def sso_grants(*, groups: Iterable[str], team_map: TeamMap) -> dict[str, str]:
    """Team name (lower case) -> the highest role the groups grant there."""
    grants: dict[str, str] = {}
    for group in groups:
        for team, role in team_map.get(group, ()):
            key = team.lower()
            if key not in grants or ROLE_RANK[role] > ROLE_RANK[grants[key]]:
                grants[key] = role
    return grants


def memberships_sync_from_groups(
    *, user: AbstractBaseUser, groups: Iterable[str], team_map: TeamMap
) -> None:
    """Set the user's memberships in the teams the map names from their groups: add, change the
    role, remove where no group grants one any more. Teams the map does not name are left alone;
    a mapped team that does not exist yet is created. A change that would leave a team without an
    admin is skipped (logged), not a failed sign-in."""
    grants = sso_grants(groups=groups, team_map=team_map)
    names = {team for targets in team_map.values() for team, _ in targets}
    named = Q()
    for name in names:
        named |= Q(name__iexact=name)  # team names are unique without regard to case
    teams = {team.name.lower(): team for team in Team.objects.filter(named)} if names else {}
    for key, role in grants.items():
        team = teams.get(key)
        if team is None:
            name = next(n for n in names if n.lower() == key)
            team = teams[key] = team_create(name=name)
        try:
            membership_add(team=team, user=user, role=role)
        except DomainError as exc:
            log.warning("SSO sign-in of %s: role in %s left as it was: %s", user, team, exc)
    for key, team in teams.items():
        if key in grants:
            continue
        try:
            membership_remove(team=team, user=user)
        except DomainError as exc:
            log.warning("SSO sign-in of %s: membership of %s kept: %s", user, team, exc)
