"""Writes for memberships: add a member, change a role, remove; a team always keeps an admin."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from webapp.audit.services import audit_record
from webapp.errors import Conflict, DomainError, NotFound

from ..events import access_changed
from ..models import Membership, Role, Team
from .tokens import user_tokens_forget


def _member_ref(user: AbstractBaseUser) -> dict[str, object]:
    """The audit log's object for a membership: the member (type "member", the user's id)."""
    return {"object_type": "member", "object_id": user.pk, "object_repr": user.get_username()}


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
