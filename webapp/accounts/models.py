"""Teams, memberships (with a role) and per-user API tokens."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Role(models.TextChoices):
    """What a member may do in a team; each role includes the ones before it."""

    VIEWER = "viewer", "Viewer"
    EDITOR = "editor", "Editor"
    ADMIN = "admin", "Admin"


ROLE_RANK: dict[str, int] = {Role.VIEWER: 0, Role.EDITOR: 1, Role.ADMIN: 2}


def role_at_least(role: str | None, required: str) -> bool:
    """True when `role` grants at least what `required` grants."""
    return role is not None and ROLE_RANK[role] >= ROLE_RANK[required]


class Team(models.Model):
    """A group of users that owns datasets, graphs and runs."""

    name = models.CharField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Sharing the workers (set by site admins in the Django admin; null: no limit). A run that
    # asks for more devices is refused at create; one over the concurrent limit waits queued.
    max_concurrent_runs = models.PositiveIntegerField(
        null=True, blank=True, help_text="Most runs of this team training at once (empty: no limit)."
    )
    max_devices_per_run = models.PositiveIntegerField(
        null=True, blank=True, help_text="Most devices (processes) one run of this team may use (empty: no limit)."
    )
    # Moving a guarded alias (`production`) of the team's models needs a second admin's approval:
    # the move is filed as a request that another admin approves (webapp/registry).
    production_needs_approval = models.BooleanField(
        default=False, help_text="Moving production needs a second admin's approval."
    )
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="teams"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's role in one team."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "team"], name="membership_unique_user_team")
        ]
        ordering = ["team_id", "user_id"]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class TokenScope(models.TextChoices):
    """What a token may do: `read` answers reads (and streams, and inference), `write` everything
    its owner's roles allow."""

    READ = "read", "Read"
    WRITE = "write", "Write"


class ApiToken(models.Model):
    """A personal API token; only the sha256 of its secret is stored.

    `scope` and `team` narrow what the owner's roles allow (never widen it): a read token is
    refused every write, a team-bound one sees that team only (webapp/api/authentication.py).
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=16, db_index=True)
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    scope = models.CharField(max_length=5, choices=TokenScope.choices, default=TokenScope.WRITE)
    # Deleting the team deletes its tokens: a bound token must never widen to every team.
    team = models.ForeignKey(
        Team, on_delete=models.CASCADE, null=True, blank=True, related_name="api_tokens"
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def is_active(self) -> bool:
        """Not revoked and not expired."""
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()


class Invitation(models.Model):
    """An offer to join a team with a role, sent to an e-mail address or a known username.

    Only the sha256 of its secret is stored (as for API tokens); the secret travels once, in the
    create answer and the mail. Single use: accepted, revoked or expired, it is only a record.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField(blank=True, default="")
    username = models.CharField(max_length=150, blank=True, default="")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    token_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(email="") | ~models.Q(username=""),
                name="invitation_names_someone",
            )
        ]

    def __str__(self) -> str:
        return f"{self.email or self.username} to {self.team} ({self.role})"

    @property
    def state(self) -> str:
        """"pending", "accepted", "revoked" or "expired"."""
        if self.accepted_at is not None:
            return "accepted"
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at <= timezone.now():
            return "expired"
        return "pending"


class OidcIdentity(models.Model):
    """A user's account at an OpenID provider: the provider's `iss` and `sub` name one person for
    good (an e-mail or a username there may change or be given to someone else)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="oidc_identity_unique_subject")
        ]
        verbose_name = "OpenID identity"
        verbose_name_plural = "OpenID identities"

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer} ({self.user})"
