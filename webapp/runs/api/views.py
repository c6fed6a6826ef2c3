"""REST API of a team's saved views of the runs list (/api/run-views/)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.models import Role
from webapp.api.mixins import TeamScopedMixin
from webapp.api.serializers import IdField, NameField, StrictSerializer, UserRefSerializer

from ..models import RunView
from ..saved_views import run_view_create, run_view_update


class RunViewSerializer(serializers.ModelSerializer):
    """A saved view: open it as GET /api/runs/?team=<team>&filter=<filter>&ordering=<ordering>."""

    created_by = UserRefSerializer(read_only=True, allow_null=True)
    columns = serializers.ListField(child=serializers.CharField(), help_text="Column keys of the runs table.")

    class Meta:
        model = RunView
        fields = ["id", "team", "name", "filter", "ordering", "columns", "created_by", "created_at", "updated_at"]
        read_only_fields = fields


class RunViewWriteSerializer(StrictSerializer):
    team = IdField(required=False, help_text="The team (on creation).")
    name = NameField(max_length=100)
    filter = serializers.CharField(required=False, allow_blank=True, max_length=2000,
                                   help_text="An expression of the runs query language (GET /api/runs/?filter=).")
    ordering = serializers.CharField(required=False, allow_blank=True, max_length=200)
    columns = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=100)


class RunViewViewSet(TeamScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                     mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """Saved views of the user's teams: members read them; editors save, change and delete them."""

    queryset = RunView.objects.select_related("created_by")
    serializer_class = RunViewSerializer
    write_role = Role.EDITOR

    @extend_schema(request=RunViewWriteSerializer, responses={201: RunViewSerializer})
    def create(self, request: Request) -> Response:
        body = RunViewWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data: dict[str, Any] = dict(body.validated_data)
        team = self.team_for_write(data.pop("team", None))
        view = run_view_create(team=team, created_by=request.user, **data)
        return Response(RunViewSerializer(view).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=RunViewWriteSerializer, responses=RunViewSerializer)
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        view = self.get_object()
        body = RunViewWriteSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        changes = {k: v for k, v in body.validated_data.items() if k != "team"}
        return Response(RunViewSerializer(run_view_update(view=view, **changes)).data)
