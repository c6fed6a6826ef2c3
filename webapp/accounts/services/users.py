"""Writes for users: create one (commands), change one's own password."""

from __future__ import annotations

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from webapp.errors import DomainError

from ..models import Role, Team
from .memberships import membership_add
from .teams import team_create


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
