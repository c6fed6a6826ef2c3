"""Writes for single sign-on: the account an OpenID provider vouched for, and its memberships
from the groups claim."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from webapp.errors import DomainError

from ..models import ROLE_RANK, OidcIdentity, Team
from .memberships import membership_add, membership_remove
from .teams import team_create

log = logging.getLogger(__name__)


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
            membership_add(team=team, user=user, role=role, actor=user)
        except DomainError as exc:
            log.warning("SSO sign-in of %s: role in %s left as it was: %s", user, team, exc)
    for key, team in teams.items():
        if key in grants:
            continue
        try:
            membership_remove(team=team, user=user, actor=user)
        except DomainError as exc:
            log.warning("SSO sign-in of %s: membership of %s kept: %s", user, team, exc)
