"""Writes for team invitations: invite (and mail the link), revoke, accept (maybe as a new
account)."""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from webapp.audit.services import audit_record
from webapp.errors import Conflict, DomainError, Forbidden, Gone, NotFound

from ..models import Invitation, Membership, Team
from ..selectors import INVITATION_PREFIX, invitation_for_secret, invitations_pending, token_hash
from .memberships import _check_role, _lock_team, _member_ref

logger = logging.getLogger(__name__)


# Most invitations one team may have waiting at once: the list is answered whole, and a script
# gone wrong must not mail without end.
MAX_PENDING_INVITATIONS = 200


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
