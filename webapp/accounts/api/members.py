"""A team's members: add one or change a role, change a role, remove (team admins; anyone may
leave)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.mixins import TeamScopedMixin
from webapp.api.serializers import StrictSerializer

from ..models import Membership, Role, Team
from ..selectors import role_in_team
from ..services.memberships import membership_add, membership_remove, membership_role_set

User = get_user_model()


class MemberSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="user.id")
    username = serializers.CharField(source="user.username")
    role = serializers.ChoiceField(choices=Role.choices)


class MemberAddSerializer(StrictSerializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices, default=Role.VIEWER)


class MemberRoleSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=Role.choices)


class TeamMemberView(TeamScopedMixin, generics.GenericAPIView):
    """POST /api/teams/<pk>/members/: add a member or change a role (team admins only)."""

    queryset = Team.objects.all()
    team_lookup = "id"
    write_role = Role.ADMIN
    serializer_class = MemberAddSerializer

    def get_object_team(self, obj: Team) -> int:
        return obj.pk

    @extend_schema(
        request=MemberAddSerializer, responses={201: MemberSerializer, 200: MemberSerializer}
    )
    def post(self, request: Request, pk: int) -> Response:
        team = self.get_object()
        payload = MemberAddSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        user = User.objects.filter(username=payload.validated_data["username"]).first()
        if user is None:
            raise exceptions.ValidationError({"username": ["No such user."]})
        existed = Membership.objects.filter(team=team, user=user).exists()
        membership = membership_add(
            team=team, user=user, role=payload.validated_data["role"], actor=request.user
        )
        return Response(
            MemberSerializer(membership).data,
            status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED,
        )


class TeamMemberDetailView(TeamScopedMixin, generics.GenericAPIView):
    """DELETE /api/teams/<pk>/members/<user_id>/: remove a member (admins; anyone may leave)."""

    queryset = Team.objects.all()
    team_lookup = "id"
    write_role = Role.ADMIN
    serializer_class = MemberSerializer

    def get_object_team(self, obj: Team) -> int:
        return obj.pk

    def check_object_permissions(self, request: Request, obj: Any) -> None:
        # Leaving a team is always allowed; removing someone else needs admin.
        if request.method == "DELETE" and str(self.kwargs.get("user_id")) == str(request.user.pk):
            if role_in_team(user=request.user, team=obj) is None:
                raise exceptions.NotFound()
            return
        super().check_object_permissions(request, obj)

    @extend_schema(request=MemberRoleSerializer, responses=MemberSerializer)
    def patch(self, request: Request, pk: int, user_id: int) -> Response:
        """Change a member's role (admins); the last admin cannot be demoted (409)."""
        team = self.get_object()
        payload = MemberRoleSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        membership = membership_role_set(
            team=team, user_id=user_id, role=payload.validated_data["role"], actor=request.user
        )
        return Response(MemberSerializer(membership).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, pk: int, user_id: int) -> Response:
        team = self.get_object()
        user = get_object_or_404(User, pk=user_id, memberships__team=team)
        membership_remove(team=team, user=user, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
