"""REST API of the audit log: a team's entries for its admins, a page or every one as JSON lines.

No route writes: entries are made by the services that change things (services.audit_record).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, time
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import StreamingHttpResponse
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.models import Role, Team
from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin

from .models import AuditEntry
from .selectors import AuditFilter, audit_entries

FILTERS = ("actor", "action", "object", "since", "until")
LIST_QUERY = frozenset({*FILTERS, "page", "page_size"})
EXPORT_QUERY = frozenset(FILTERS)
EXPORT_CHUNK = 500  # rows read per query while streaming: memory stays flat whatever the log holds

# The schema's 403 for a read (webapp/api/schema_errors.py): members who are not admins get it.
ADMIN_ONLY = {"x-role": "admin"}
AUDIT_PARAMETERS = [
    OpenApiParameter("actor", str, description="Only changes by this username."),
    OpenApiParameter("action", str, description='An action ("run.cancelled"), or a prefix ending in "." ("member.").'),
    OpenApiParameter("object", str, description='The object as type:id ("run:42"), or a type alone ("run").'),
    OpenApiParameter("since", OpenApiTypes.DATETIME,
                     description="At or after this ISO-8601 date-time (UTC when no offset); a date alone: that day's start."),
    OpenApiParameter("until", OpenApiTypes.DATETIME,
                     description="Before this ISO-8601 date-time (UTC when no offset); a date alone: through that day."),
]


class AuditEntrySerializer(serializers.ModelSerializer):
    before = serializers.JSONField(allow_null=True, help_text="The changed fields before (null: none, a creation).")
    after = serializers.JSONField(allow_null=True, help_text="The changed fields after (null: none, a deletion).")

    class Meta:
        model = AuditEntry
        fields = ["id", "at", "team", "actor", "actor_name", "action", "object_type", "object_id", "object_repr",
                  "before", "after"]
        read_only_fields = fields


def _bad(name: str, message: str) -> ApiError:
    return ApiError(400, "invalid", f"{name}: {message}", fields={name: [message]})


def _moment(params: Any, name: str, *, end_of_day: bool = False) -> datetime | None:
    raw = (params.get(name) or "").strip()
    if not raw:
        return None
    try:
        # A date alone first: parse_datetime takes "2026-01-31" as that day's midnight.
        day = parse_date(raw) if len(raw) == 10 else None
        moment = None if day is not None else parse_datetime(raw)
    except ValueError:
        moment = day = None
    if day is not None:
        # A date alone: since that day's start; until that day's end (the whole day is in).
        moment = datetime.combine(day, time.max if end_of_day else time.min)
    if moment is None:
        raise _bad(name, f"{raw!r} is not an ISO-8601 date or date-time (2026-01-31 or 2026-01-31T12:00:00Z).")
    # In UTC: PostgreSQL refuses the offsets beyond +-15:59 that ISO-8601 (and Python) allow.
    return (moment if timezone.is_aware(moment) else moment.replace(tzinfo=UTC)).astimezone(UTC)


def audit_filter(params: Any, known: frozenset[str]) -> AuditFilter:
    """The filter a query string asks for; an unknown or malformed parameter is a 400 naming it."""
    unknown = sorted(set(params) - known)
    if unknown:  # a misspelt filter must not answer with every entry
        listed = ", ".join(sorted(known))
        raise ApiError(400, "invalid", f"Unknown parameter {', '.join(map(repr, unknown))}; the audit log takes "
                       f"{listed}.", fields={name: [f"Not a parameter of the audit log ({listed})."] for name in unknown})
    for name in FILTERS:  # checked before the export starts streaming: PostgreSQL refuses NUL in a text value
        value = params.get(name) or ""
        if "\x00" in value or len(value) > 200:
            raise _bad(name, "At most 200 characters, without the NUL character.")
    object_type = object_id = None
    raw_object = (params.get("object") or "").strip()
    if raw_object:
        object_type, _, object_id = raw_object.partition(":")
        if not object_type or (":" in raw_object and not object_id):
            raise _bad("object", f"{raw_object!r} is not type:id (run:42) or a type (run).")
    since, until = _moment(params, "since"), _moment(params, "until", end_of_day=True)
    if since is not None and until is not None and since >= until:
        raise _bad("until", "Must be after since.")
    return AuditFilter(actor=(params.get("actor") or "").strip() or None,
                       action=(params.get("action") or "").strip() or None,
                       object_type=object_type or None, object_id=object_id or None, since=since, until=until)


class _TeamAdminView(TeamScopedMixin, generics.GenericAPIView):
    """A team the user belongs to (404 otherwise) of which they are an admin (403 otherwise)."""

    queryset = Team.objects.all()
    team_lookup = "id"
    write_role = Role.ADMIN

    def get_object_team(self, obj: Team) -> int:
        return obj.pk

    def admin_team(self) -> Team:
        team = self.get_object()
        self.require_role(team.pk, Role.ADMIN)
        return team


class TeamAuditView(_TeamAdminView):
    """GET /api/teams/<pk>/audit/: a page of the team's audit log, newest first (team admins)."""

    serializer_class = AuditEntrySerializer

    @extend_schema(parameters=AUDIT_PARAMETERS, responses=AuditEntrySerializer(many=True), extensions=ADMIN_ONLY)
    def get(self, request: Request, pk: int) -> Response:
        team = self.admin_team()
        rows = audit_entries(team=team, where=audit_filter(request.query_params, LIST_QUERY))
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(AuditEntrySerializer(page, many=True).data)


class TeamAuditExportView(_TeamAdminView):
    """GET /api/teams/<pk>/audit/export/: every filtered entry, one JSON object a line, newest first."""

    serializer_class = AuditEntrySerializer
    pagination_class = None

    @extend_schema(parameters=AUDIT_PARAMETERS, extensions=ADMIN_ONLY, responses={
        (200, "application/jsonl"): OpenApiResponse(description="One AuditEntry JSON object per line, newest first."),
    })
    def get(self, request: Request, pk: int) -> StreamingHttpResponse:
        team = self.admin_team()
        rows = audit_entries(team=team, where=audit_filter(request.query_params, EXPORT_QUERY))
        response = StreamingHttpResponse(_lines(rows), content_type="application/jsonl; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="audit-team{team.pk}.jsonl"'
        return response


def entry_json(entry: AuditEntry) -> dict[str, Any]:
    """An entry as AuditEntrySerializer writes it, built by hand: a serializer per row made the
    export ~30x slower (tests/webapp/test_audit.py checks both give the same object)."""
    return {"id": entry.id, "at": entry.at.astimezone(UTC).isoformat().replace("+00:00", "Z"), "team": entry.team_id,
            "actor": entry.actor_id, "actor_name": entry.actor_name, "action": entry.action,
            "object_type": entry.object_type, "object_id": entry.object_id, "object_repr": entry.object_repr,
            "before": entry.before, "after": entry.after}


def _lines(rows: Any) -> Iterator[bytes]:
    for entry in rows.iterator(chunk_size=EXPORT_CHUNK):
        yield (json.dumps(entry_json(entry), cls=DjangoJSONEncoder, ensure_ascii=False) + "\n").encode()
