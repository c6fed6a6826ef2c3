"""Writes for accounts: teams, memberships, users and API tokens."""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from webapp.audit.services import audit_record
from webapp.errors import Conflict, DomainError, Forbidden, Gone, NotFound

from .events import access_changed
from .models import (
    ROLE_RANK,
    ApiToken,
    Invitation,
    Membership,
    OidcIdentity,
    Role,
    Team,
    TokenScope,
)

# token_hash and TOKEN_PREFIX live in selectors (the token lookup hashes with them); named
# here too for callers that create tokens.
from .selectors import (
    INVITATION_PREFIX,
    TOKEN_PREFIX,
    invitation_for_secret,
    invitations_pending,
    token_cache_key,
    token_hash,
    tokens_live,
)
from .selectors import token_team_id as _token_team_id

logger = logging.getLogger(__name__)

MAX_TOKEN_DAYS = 3650
# Most invitations one team may have waiting at once: the list is answered whole, and a script
# gone wrong must not mail without end.
MAX_PENDING_INVITATIONS = 200

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
    audit_record(action="team.created", actor=creator, team=team, obj=team, after={"name": team.name})
    return team


def _member_ref(user: AbstractBaseUser) -> dict[str, object]:
    """The audit log's object for a membership: the member (type "member", the user's id)."""
    return {"object_type": "member", "object_id": user.pk, "object_repr": user.get_username()}


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
def membership_add(
    *, team: Team, user: AbstractBaseUser, role: str, actor: AbstractBaseUser | None = None
) -> Membership:
    """Add a user to a team, or change their role if they are already a member.

    `actor` is who did it (None: a command), for the audit log."""
    _check_role(role)
    _lock_team(team)
    membership, created = Membership.objects.get_or_create(
        team=team, user=user, defaults={"role": role}
    )
    if created:
        audit_record(action="member.added", actor=actor, team=team, **_member_ref(user), after={"role": role})
    elif membership.role != role:
        _role_change(membership=membership, role=role, actor=actor)
    return membership


@transaction.atomic
def membership_role_set(
    *, team: Team, user_id: int, role: str, actor: AbstractBaseUser | None = None
) -> Membership:
    """Change a member's role (PATCH); refused (409 "last_admin") when it leaves the team no admin.

    Takes effect at once: roles are read per request, the user's kept token lookups are dropped
    and their open streams re-check.
    """
    _check_role(role)
    _lock_team(team)
    membership = Membership.objects.select_related("user").filter(team=team, user_id=user_id).first()
    if membership is None:
        raise NotFound("not_found", "No such member in this team.")
    if membership.role != role:
        _role_change(membership=membership, role=role, actor=actor)
    return membership


@transaction.atomic
def membership_remove(*, team: Team, user: AbstractBaseUser, actor: AbstractBaseUser | None = None) -> None:
    """Remove a user from a team; the last admin cannot leave (409 "last_admin"). `actor`: who
    did it (the audit log).

    Their open streams of the team's runs close (access_changed) and their tokens' kept lookups
    are dropped, so the next request with any of their tokens sees the team gone.
    """
    _lock_team(team)
    membership = Membership.objects.filter(team=team, user=user).first()
    if membership is None:
        return
    if membership.role == Role.ADMIN:
        _ensure_another_admin(team=team, leaving=membership)
    membership.delete()
    user_tokens_forget(user_id=user.pk)
    audit_record(action="member.removed", actor=actor, team=team, **_member_ref(user),
                 before={"role": membership.role})
    access_changed(user_id=user.pk)


def _check_role(role: str) -> None:
    if role not in Role.values:
        raise DomainError("invalid", f'Unknown role "{role}": one of {", ".join(Role.values)}.', field="role")


def _lock_team(team: Team) -> None:
    """Serialise membership changes of one team (two admins demoting each other at once cannot
    both pass the last-admin check)."""
    Team.objects.select_for_update().filter(pk=team.pk).first()


def _role_change(*, membership: Membership, role: str, actor: AbstractBaseUser | None) -> None:
    if membership.role == Role.ADMIN and role != Role.ADMIN:
        _ensure_another_admin(team=membership.team, leaving=membership)
    before = membership.role
    membership.role = role
    membership.save(update_fields=["role"])
    audit_record(action="member.role_changed", actor=actor, team=membership.team, **_member_ref(membership.user),
                 before={"role": before}, after={"role": role})
    user_tokens_forget(user_id=membership.user_id)
    access_changed(user_id=membership.user_id)


def _ensure_another_admin(*, team: Team, leaving: Membership) -> None:
    others = Membership.objects.filter(team=team, role=Role.ADMIN).exclude(pk=leaving.pk)
    if not others.exists():
        raise Conflict(
            "last_admin",
            "A team always keeps at least one admin: make someone else admin first.",
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


# --- invitations ----------------------------------------------------------------------------


def invitation_create(
    *,
    team: Team,
    invited_by: AbstractBaseUser,
    role: str,
    email: str = "",
    username: str = "",
    accept_url_base: str,
) -> tuple[Invitation, str, bool]:
    """Invite someone (by e-mail or by username) into a team with a role, and mail them the link.

    Returns the invitation, its secret (stored only as sha256; shown once) and whether a mail was
    sent. `accept_url_base` + secret is the accept page's address. A person who is already a
    member is refused (409 "already_member"). A mail that cannot be sent does not undo the
    invitation: the admin has the link in the answer.
    """
    _check_role(role)
    email, username = email.strip(), username.strip()
    if bool(email) == bool(username):
        raise DomainError(
            "invalid", "Give either an e-mail address or a username.",
            fields={"email": ["Give either an e-mail address or a username."]},
        )
    User = get_user_model()
    invitee = None
    if username:
        invitee = User.objects.filter(username=username).first()
        if invitee is None:
            raise DomainError("invalid", f'No user called "{username}".', field="username")
        if Membership.objects.filter(team=team, user=invitee).exists():
            raise Conflict("already_member", f'{username} is already a member of {team.name}.',
                           field="username")
    elif Membership.objects.filter(team=team, user__email__iexact=email).exists():
        raise Conflict("already_member", f"{email} is already a member of {team.name}.", field="email")
    raw = INVITATION_PREFIX + secrets.token_urlsafe(32)
    days = int(settings.NETLOOM_INVITATION_DAYS)
    with transaction.atomic():
        _lock_team(team)
        if invitations_pending(team=team).count() >= MAX_PENDING_INVITATIONS:
            raise Conflict(
                "too_many_invitations",
                f"{team.name} already has {MAX_PENDING_INVITATIONS} invitations waiting, the most a team "
                "may have: revoke some first (DELETE /api/teams/<id>/invitations/<iid>/).",
                extra={"limit": MAX_PENDING_INVITATIONS},
            )
        invitation = Invitation.objects.create(
            team=team,
            email=email,
            username=username,
            role=role,
            token_hash=token_hash(raw),
            invited_by=invited_by,
            expires_at=timezone.now() + timedelta(days=days),
        )
        audit_record(action="invitation.created", actor=invited_by, team=team, obj=invitation,
                     object_type="invitation", object_repr=email or username,
                     after={"email": email, "username": username, "role": role,
                            "expires_at": invitation.expires_at})
    address = email or (invitee.email if invitee is not None else "")
    mailed = bool(address) and _invitation_mail(
        invitation=invitation, address=address, url=accept_url_base + raw
    )
    return invitation, raw, mailed


def _invitation_mail(*, invitation: Invitation, address: str, url: str) -> bool:
    inviter = invitation.invited_by.get_username() if invitation.invited_by else "An admin"
    expires = invitation.expires_at.strftime("%Y-%m-%d %H:%M UTC")
    body = (
        f"{inviter} invites you to the team {invitation.team.name} on Netloom as {invitation.role}.\n\n"
        f"Accept (and create an account, or sign in) here:\n{url}\n\n"
        f"The link works once and until {expires}.\n"
    )
    try:
        send_mail(f"Join {invitation.team.name} on Netloom", body, None, [address])
    except Exception as exc:  # the SMTP server refused or is away: the link is in the answer
        logger.warning("could not mail invitation %s to its address: %s", invitation.pk, exc)
        return False
    return True


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor: AbstractBaseUser | None = None) -> None:
    """Revoke a pending invitation; one already used or expired stays as it is (409)."""
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    state = invitation.state
    if state == "revoked":
        return
    if state != "pending":
        raise Conflict("invitation_" + state, f"This invitation is already {state}.")
    invitation.revoked_at = timezone.now()
    invitation.save(update_fields=["revoked_at"])
    audit_record(action="invitation.revoked", actor=actor, team=invitation.team, obj=invitation,
                 object_type="invitation", object_repr=invitation.email or invitation.username,
                 before={"state": state}, after={"state": "revoked"})


GONE_REASONS = {
    "accepted": "This invitation has already been used.",
    "revoked": "This invitation was revoked by a team admin.",
    "expired": "This invitation has expired; ask a team admin for a new one.",
}


@transaction.atomic
def invitation_accept(
    *,
    raw_token: str,
    user: AbstractBaseUser | None = None,
    username: str = "",
    password: str = "",
) -> Membership:
    """Accept an invitation: for `user` (signed in), or for a new account `username`/`password`.

    A used, revoked or expired invitation is 410 (code "invitation_<state>", with the reason); an
    invitation by username is for that user only (403); someone already a member gets 409.
    """
    invitation = invitation_for_secret(raw_token=raw_token, for_update=True)
    if invitation is None:
        raise NotFound("not_found", "No such invitation: check the link.")
    state = invitation.state
    if state != "pending":
        raise Gone(f"invitation_{state}", GONE_REASONS[state], extra={"reason": state})
    if user is None:
        user = _account_create(username=username, password=password, email=invitation.email)
    elif invitation.username and invitation.username != user.get_username():
        raise Forbidden(
            "invitation_for_someone_else",
            f"This invitation is for {invitation.username}; sign in as them to accept it.",
        )
    _lock_team(invitation.team)
    if Membership.objects.filter(team=invitation.team, user=user).exists():
        raise Conflict("already_member", f"You are already a member of {invitation.team.name}.")
    membership = Membership.objects.create(team=invitation.team, user=user, role=invitation.role)
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    audit_record(action="invitation.accepted", actor=user, team=invitation.team, obj=invitation,
                 object_type="invitation", object_repr=invitation.email or invitation.username,
                 before={"state": "pending"}, after={"state": "accepted", "role": invitation.role})
    audit_record(action="member.added", actor=user, team=invitation.team, **_member_ref(user),
                 after={"role": invitation.role, "invitation": invitation.pk})
    return membership


def _account_create(*, username: str, password: str, email: str) -> AbstractBaseUser:
    """A new account for an invitee; Django's password validators apply (errors name the field)."""
    User = get_user_model()
    username = username.strip()
    fields: dict[str, list[str]] = {}
    if not username:
        fields["username"] = ["Choose a username."]
    elif User.objects.filter(username__iexact=username).exists():
        fields["username"] = [f'The username "{username}" is taken.']
    else:
        try:
            User.username_validator(username)
        except ValidationError as exc:
            fields["username"] = list(exc.messages)
    if not password:
        fields["password"] = ["Choose a password."]
    else:
        try:
            password_validation.validate_password(password, user=User(username=username, email=email))
        except ValidationError as exc:
            fields["password"] = list(exc.messages)
    if fields:
        raise DomainError("invalid", next(iter(fields.values()))[0], fields=fields)
    return User.objects.create_user(username=username, password=password, email=email)


def user_password_change(*, user: AbstractBaseUser, old_password: str, new_password: str) -> None:
    """Change the user's own password: the old one must match; Django's validators apply.

    Other sessions of the user end (Django ties a session to the password); API tokens stay.
    """
    if not user.check_password(old_password):
        raise DomainError("wrong_password", "The current password is wrong.", field="old_password")
    try:
        password_validation.validate_password(new_password, user=user)
    except ValidationError as exc:
        raise DomainError("invalid", exc.messages[0], fields={"new_password": list(exc.messages)}) from exc
    user.set_password(new_password)
    user.save(update_fields=["password"])


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
