"""REST API for jobs: a job's state, progress and outcome; the jobs of the caller's teams."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import mixins, serializers, viewsets

from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin
from webapp.api.serializers import ID_PARAMETER, UserRefSerializer, comma_separated

from .models import Job, JobState

JOB_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "nullable": True,
    "description": "Why the job failed: a message a user can act on, a code (failed, internal, "
    "worker_lost, expired, or the kind's own) and what the kind adds (a dataset check's row and "
    "column). Null unless failed.",
    "properties": {"message": {"type": "string"}, "code": {"type": "string"}},
    "required": ["message", "code"],
    "additionalProperties": True,
}


@extend_schema_field(JOB_ERROR_SCHEMA)
class JobErrorField(serializers.JSONField):
    """A failed job's error JSON, null otherwise."""


@extend_schema_field({"type": "object", "nullable": True, "additionalProperties": True})
class JobResultField(serializers.JSONField):
    """What a done job produced (the kind's JSON), null before."""


class JobSerializer(serializers.ModelSerializer):
    owner = UserRefSerializer(read_only=True, allow_null=True)
    subject_id = serializers.IntegerField(
        read_only=True, allow_null=True,
        help_text='The id of the object the job is about, as its kind says (a "datasets.process" '
        "job: the dataset).",
    )  # fmt: skip
    progress = serializers.FloatField(
        read_only=True, allow_null=True, help_text="Fraction done (0..1) for kinds that report it."
    )
    error = JobErrorField(read_only=True)
    result = JobResultField(read_only=True)

    class Meta:
        model = Job
        fields = [
            "id", "kind", "team", "owner", "subject_id", "state", "progress", "attempts",
            "max_attempts", "result", "error", "created_at", "started_at", "finished_at",
            "expires_at",
        ]  # fmt: skip
        read_only_fields = fields


JOB_LIST_PARAMETERS = [
    OpenApiParameter("team", ID_PARAMETER, description="Only jobs of this team."),
    OpenApiParameter("kind", str, description='Only jobs of this kind ("datasets.process").'),
    OpenApiParameter("state", comma_separated(JobState.values), description="Comma-separated states (queued, running, done, failed, cancelled)."),
]


@extend_schema_view(list=extend_schema(parameters=JOB_LIST_PARAMETERS))
class JobViewSet(TeamScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Jobs of the user's teams (read only: each kind is started by the endpoint of its work)."""

    queryset = Job.objects.select_related("owner")
    serializer_class = JobSerializer

    def get_queryset(self) -> QuerySet:
        """Scoped jobs, optionally filtered by `?kind=` and `?state=` (and `?team=`)."""
        queryset = super().get_queryset()
        params = self.request.query_params
        if params.get("kind"):
            queryset = queryset.filter(kind=params["kind"])
        if params.get("state"):
            states = [s for s in params["state"].split(",") if s]
            if any(s not in JobState.values for s in states):
                message = f"state must be among {', '.join(JobState.values)}."
                raise ApiError(400, "invalid", message, fields={"state": [message]})
            queryset = queryset.filter(state__in=states)
        return queryset
