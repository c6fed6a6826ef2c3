"""Reads of the audit log: a team's entries, newest first, filtered."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from .models import AuditEntry


@dataclass(frozen=True)
class AuditFilter:
    """What to keep: `actor` (username), `action` (exact, or a prefix ending in "."), `object_type`
    and `object_id` (either may be None), `since` (inclusive) and `until` (exclusive)."""

    actor: str | None = None
    action: str | None = None
    object_type: str | None = None
    object_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None


def audit_entries(*, team: Any, where: AuditFilter | None = None) -> QuerySet[AuditEntry]:
    """Entries of `team` (an id or a Team) that pass `where`, newest first."""
    where = where or AuditFilter()
    rows = AuditEntry.objects.filter(team=team)
    if where.actor:
        rows = rows.filter(actor_name=where.actor)
    if where.action:
        if where.action.endswith("."):
            # LIKE, not a range ("run." <= action < "run/"): a database collation may not order
            # punctuation by its code point.
            rows = rows.filter(action__startswith=where.action)
        else:
            rows = rows.filter(action=where.action)
    if where.object_type:
        rows = rows.filter(object_type=where.object_type)
    if where.object_id:
        rows = rows.filter(object_id=where.object_id)
    if where.since is not None:
        rows = rows.filter(at__gte=where.since)
    if where.until is not None:
        rows = rows.filter(at__lt=where.until)
    return rows.order_by("-at", "-id")
