"""Teams: the user's teams, a new one, the settings its admins own."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin
from webapp.api.serializers import ColumnBounds, KnownFieldsOnly, StrictSerializer

from ..models import Role, Team
from ..selectors import role_in_team, teams_for_user, token_team_id
from ..services.teams import team_create, team_update
from .members import MemberSerializer


class TeamSerializer(KnownFieldsOnly, ColumnBounds, serializers.ModelSerializer):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Team
        # The limits are set by site admins (Django admin); team members only read them. Team
        # admins change `production_needs_approval` with PATCH.
        fields = ["id", "name", "role", "created_at", "max_concurrent_runs", "max_devices_per_run",
                  "production_needs_approval"]
        read_only_fields = ["id", "role", "created_at", "max_concurrent_runs", "max_devices_per_run",
                            "production_needs_approval"]

    def get_role(self, team: Team) -> str | None:
        return role_in_team(user=self.context["request"].user, team=team)


class TeamDetailSerializer(TeamSerializer):
    members = serializers.SerializerMethodField()

    class Meta(TeamSerializer.Meta):
        fields = [*TeamSerializer.Meta.fields, "members"]
        read_only_fields = [*TeamSerializer.Meta.read_only_fields, "members"]

    @extend_schema_field(MemberSerializer(many=True))
    def get_members(self, team: Team) -> list[dict[str, Any]]:
        memberships = team.memberships.select_related("user").order_by("user__username")
        return MemberSerializer(memberships, many=True).data


class TeamUpdateSerializer(StrictSerializer):
    production_needs_approval = serializers.BooleanField(
        required=False, help_text="Moving production (of the team's models) needs a second admin's approval."
    )


class TeamViewSet(
    TeamScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Teams the user belongs to; anyone signed in may create one (and becomes its admin)."""

    queryset = Team.objects.all()
    team_lookup = "id"
    write_role = Role.ADMIN

    def get_serializer_class(self):
        return TeamDetailSerializer if self.action == "retrieve" else TeamSerializer

    def get_queryset(self):
        return teams_for_user(user=self.request.user).order_by("name")

    def get_object_team(self, obj: Team) -> int:
        return obj.pk

    @extend_schema(request=TeamUpdateSerializer, responses=TeamDetailSerializer)
    def partial_update(self, request: Request, pk: int) -> Response:
        """PATCH /api/teams/<pk>/: the settings team admins own."""
        team = self.get_object()  # a foreign team is a 404, a non-admin's write a 403
        payload = TeamUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        team = team_update(team=team, **payload.validated_data)
        return Response(TeamDetailSerializer(team, context={"request": request}).data)

    def perform_create(self, serializer: TeamSerializer) -> None:
        if token_team_id(self.request.user) is not None:
            raise ApiError(status.HTTP_403_FORBIDDEN, "token_team",
                           "This token is bound to one team: it cannot make another. Use an unbound token.")
        serializer.instance = team_create(
            name=serializer.validated_data["name"], creator=self.request.user
        )
