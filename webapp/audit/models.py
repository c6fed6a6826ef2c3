"""The audit log: one row per change to a team's objects or membership (or a site-level change).

An entry is written by `services.audit_record` inside the transaction of the change it records
(a change rolled back leaves no entry) and never changed afterwards: no route edits or deletes
one, and the Django admin shows them read-only.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class AuditEntry(models.Model):
    """One change: who (`actor`, kept by name too), when, what (`action`), on which object,
    and the object's relevant fields before and after (null where there is no such side)."""

    # Null: a site-level change (a personal API token). SET_NULL: the record outlives the team (a
    # site admin deleting one in the Django admin); `team_name` still says whose it was.
    team = models.ForeignKey(
        "accounts.Team", on_delete=models.SET_NULL, null=True, blank=True, related_name="audit_entries"
    )
    team_name = models.CharField(max_length=100, blank=True, default="")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The actor's username when it acted ("system" for a command or a worker): kept after the
    # user is renamed or deleted.
    actor_name = models.CharField(max_length=150)
    at = models.DateTimeField(default=timezone.now)
    # Dotted, `<object>.<verb>` ("member.role_changed", "run.cancelled"); see docs/subsystems/audit.md.
    action = models.CharField(max_length=64)
    object_type = models.CharField(max_length=40, blank=True, default="")
    object_id = models.CharField(max_length=64, blank=True, default="")
    object_repr = models.CharField(max_length=200, blank=True, default="")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    request_id = models.CharField(max_length=64, blank=True, default="")
    source_ip = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            # The team's page, newest first, and each of its filters, in the page's order (so a
            # filtered page is read from its index, not sorted).
            models.Index(fields=["team", "-at", "-id"], name="audit_team_at"),
            models.Index(fields=["team", "action", "-at", "-id"], name="audit_team_action"),
            models.Index(fields=["team", "actor_name", "-at", "-id"], name="audit_team_actor"),
            models.Index(fields=["team", "object_type", "object_id", "-at", "-id"], name="audit_team_object"),
            models.Index(fields=["-at", "-id"], name="audit_at"),
        ]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name} {self.action} {self.object_type}:{self.object_id}"
