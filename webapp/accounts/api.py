"""REST API for accounts: tokens, browser login, the current user, teams and members."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate, get_user_model, login, logout
from django.contrib.auth.signals import user_logged_in
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import exceptions, generics, mixins, serializers, status, viewsets
from rest_framework.authentication import CSRFCheck
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.errors import ApiError
from webapp.api.lockout import SIGN_IN_SCOPE, SignInRateThrottle
from webapp.api.mixins import TeamScopedMixin
from webapp.api.serializers import ColumnBounds, KnownFieldsOnly, NameField, StrictSerializer

from . import services
from .models import ApiToken, Membership, Role, Team
from .selectors import memberships_for_user, role_in_team

User = get_user_model()


# --- serializers ---------------------------------------------------------------------------


class CredentialsSerializer(StrictSerializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=512, trim_whitespace=False)


class TokenRequestSerializer(CredentialsSerializer):
    name = NameField(max_length=100, required=False, allow_blank=True, default="")
    expires_in_days = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=services.MAX_TOKEN_DAYS
    )


class TokenCreateSerializer(StrictSerializer):
    name = NameField(max_length=100, required=False, allow_blank=True, default="")
    expires_in_days = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=services.MAX_TOKEN_DAYS
    )


class ApiTokenSerializer(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at"]
        read_only_fields = fields


class NewTokenSerializer(ApiTokenSerializer):
    token = serializers.CharField(help_text="The secret; shown only in this response.")

    class Meta(ApiTokenSerializer.Meta):
        fields = ["token", *ApiTokenSerializer.Meta.fields]
        read_only_fields = fields


class UserTeamSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=Role.choices)


class MeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    teams = UserTeamSerializer(many=True)


class MemberSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="user.id")
    username = serializers.CharField(source="user.username")
    role = serializers.ChoiceField(choices=Role.choices)


class TeamSerializer(KnownFieldsOnly, ColumnBounds, serializers.ModelSerializer):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Team
        # The limits are set by site admins (Django admin); team members only read them.
        fields = ["id", "name", "role", "created_at", "max_concurrent_runs", "max_devices_per_run"]
        read_only_fields = ["id", "role", "created_at", "max_concurrent_runs", "max_devices_per_run"]

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


class MemberAddSerializer(StrictSerializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices, default=Role.VIEWER)


def me_payload(user: Any) -> dict[str, Any]:
    """The current user with their teams and roles (GET /api/auth/me/)."""
    return {
        "id": user.pk,
        "username": user.get_username(),
        "teams": [
            {"id": m.team_id, "name": m.team.name, "role": m.role}
            for m in memberships_for_user(user=user)
        ],
    }


def _check_credentials(request: Request, data: dict[str, Any]) -> Any:
    user = authenticate(request._request, username=data["username"], password=data["password"])
    if user is None or not user.is_active:
        raise ApiError(
            status.HTTP_400_BAD_REQUEST,
            "invalid_credentials",
            "Unknown username or wrong password.",
        )
    return user


# --- tokens -------------------------------------------------------------------------------


class TokenObtainView(APIView):
    """POST /api/auth/token/: exchange a username and password for a new API token."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    # Password attempts per client address: slowed past NETLOOM_SIGN_IN_RATE, never locked.
    throttle_classes = [SignInRateThrottle]
    throttle_scope = SIGN_IN_SCOPE

    @extend_schema(request=TokenRequestSerializer, responses={201: NewTokenSerializer})
    def post(self, request: Request) -> Response:
        payload = TokenRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        user = _check_credentials(request, payload.validated_data)
        # A token sign-in is a sign-in: last_login moves and the failure count (django-axes)
        # starts again, as a session login does through login().
        user_logged_in.send(sender=type(user), request=request._request, user=user)
        token, raw = services.token_create(
            user=user,
            name=payload.validated_data.get("name", ""),
            expires_in_days=payload.validated_data.get("expires_in_days"),
        )
        token.token = raw  # type: ignore[attr-defined]
        return Response(NewTokenSerializer(token).data, status=status.HTTP_201_CREATED)


class TokenViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """The user's own API tokens: list, create (plaintext shown once), revoke."""

    serializer_class = ApiTokenSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        return ApiToken.objects.filter(user=self.request.user)

    @extend_schema(request=TokenCreateSerializer, responses={201: NewTokenSerializer})
    def create(self, request: Request) -> Response:
        payload = TokenCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        token, raw = services.token_create(
            user=request.user,
            name=payload.validated_data.get("name", ""),
            expires_in_days=payload.validated_data.get("expires_in_days"),
        )
        token.token = raw  # type: ignore[attr-defined]
        return Response(NewTokenSerializer(token).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: ApiToken) -> None:
        services.token_revoke(token=instance, actor=self.request.user)


# --- browser session ----------------------------------------------------------------------


class CsrfView(APIView):
    """GET /api/auth/csrf/: sets the csrftoken cookie the browser app sends back."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(responses=inline_serializer("Csrf", {"csrf_token": serializers.CharField()}))
    def get(self, request: Request) -> Response:
        return Response({"csrf_token": get_token(request._request)})


class LoginView(APIView):
    """POST /api/auth/login/: start a browser session (needs the CSRF token like any form)."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    # Password attempts per client address: slowed past NETLOOM_SIGN_IN_RATE, never locked.
    throttle_classes = [SignInRateThrottle]
    throttle_scope = SIGN_IN_SCOPE

    @extend_schema(request=CredentialsSerializer, responses=MeSerializer)
    def post(self, request: Request) -> Response:
        # DRF exempts API views from CSRF; a login form must not be (login CSRF).
        check = CSRFCheck(lambda req: None)
        check.process_request(request._request)
        reason = check.process_view(request._request, None, (), {})
        if reason:
            raise exceptions.PermissionDenied(f"CSRF failed: {reason}")
        payload = CredentialsSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        user = _check_credentials(request, payload.validated_data)
        login(request._request, user)
        return Response(me_payload(user))


class LogoutView(APIView):
    """POST /api/auth/logout/: end the browser session."""

    @extend_schema(request=None, responses={204: None})
    def post(self, request: Request) -> Response:
        logout(request._request)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(APIView):
    """GET /api/auth/me/: who am I, and in which teams with which role."""

    @extend_schema(responses=MeSerializer)
    def get(self, request: Request) -> Response:
        return Response(me_payload(request.user))


# --- teams --------------------------------------------------------------------------------


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
        queryset = Team.objects.filter(memberships__user=self.request.user)
        return queryset.order_by("name")

    def get_object_team(self, obj: Team) -> int:
        return obj.pk

    def perform_create(self, serializer: TeamSerializer) -> None:
        serializer.instance = services.team_create(
            name=serializer.validated_data["name"], creator=self.request.user
        )


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
        membership = services.membership_add(
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
        if str(self.kwargs.get("user_id")) == str(request.user.pk):
            if role_in_team(user=request.user, team=obj) is None:
                raise exceptions.NotFound()
            return
        super().check_object_permissions(request, obj)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, pk: int, user_id: int) -> Response:
        team = self.get_object()
        user = get_object_or_404(User, pk=user_id, memberships__team=team)
        services.membership_remove(team=team, user=user, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
