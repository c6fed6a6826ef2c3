"""API tokens: a new one for a username and password, and the user's own (list, create, revoke)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_in
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.lockout import SIGN_IN_SCOPE, SignInRateThrottle
from webapp.api.serializers import NameField, StrictSerializer

from ..models import ApiToken, TokenScope
from ..selectors import token_team_id
from ..services.tokens import MAX_TOKEN_DAYS, token_create, token_revoke
from .passwords import CredentialsSerializer, _check_credentials, _require_local_passwords


@extend_schema_field({"oneOf": [{"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
                               {"type": "string", "maxLength": 100}], "nullable": True})
class TeamRefField(serializers.Field):
    """A team by id (`3`, `"3"`) or by name (`"Vision"`); the service checks it is the user's."""

    def to_internal_value(self, data: Any) -> int | str:
        if isinstance(data, bool) or not isinstance(data, int | str):
            raise serializers.ValidationError("A team id or name.")
        if isinstance(data, str) and not 0 < len(data.strip()) <= 100:
            raise serializers.ValidationError("A team id or name.")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class TokenOptionsSerializer(StrictSerializer):
    """What a new token may do and for how long (both token-creating routes take these)."""

    name = NameField(max_length=100, required=False, allow_blank=True, default="")
    expires_in_days = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_TOKEN_DAYS
    )
    expires_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="When the token stops signing in (in the future)."
    )
    scope = serializers.ChoiceField(
        choices=TokenScope.choices, default=TokenScope.WRITE,
        help_text="read: GET, streams and inference only; write: whatever your roles allow.",
    )
    team = TeamRefField(
        required=False, allow_null=True, help_text="Bind the token to one of your teams (id or name)."
    )


class TokenRequestSerializer(CredentialsSerializer, TokenOptionsSerializer):
    pass


class TokenCreateSerializer(TokenOptionsSerializer):
    pass


def _token_options(data: dict[str, Any]) -> dict[str, Any]:
    """token_create's keyword arguments from a validated TokenOptionsSerializer."""
    return {
        "name": data.get("name", ""),
        "expires_in_days": data.get("expires_in_days"),
        "expires_at": data.get("expires_at"),
        "scope": data.get("scope", TokenScope.WRITE),
        "team": data.get("team"),
    }


class ApiTokenSerializer(serializers.ModelSerializer):
    team_name = serializers.CharField(source="team.name", read_only=True, allow_null=True, default=None)

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "scope", "team", "team_name", "created_at", "expires_at",
                  "last_used_at", "revoked_at"]
        read_only_fields = fields


class NewTokenSerializer(ApiTokenSerializer):
    token = serializers.CharField(help_text="The secret; shown only in this response.")

    class Meta(ApiTokenSerializer.Meta):
        fields = ["token", *ApiTokenSerializer.Meta.fields]
        read_only_fields = fields


class TokenObtainView(APIView):
    """POST /api/auth/token/: exchange a username and password for a new API token."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    # Password attempts per client address: slowed past NETLOOM_SIGN_IN_RATE, never locked.
    throttle_classes = [SignInRateThrottle]
    throttle_scope = SIGN_IN_SCOPE

    @extend_schema(request=TokenRequestSerializer, responses={201: NewTokenSerializer})
    def post(self, request: Request) -> Response:
        _require_local_passwords()
        payload = TokenRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        user = _check_credentials(request, payload.validated_data)
        # A token sign-in is a sign-in: last_login moves and the failure count (django-axes)
        # starts again, as a session login does through login().
        user_logged_in.send(sender=type(user), request=request._request, user=user)
        token, raw = token_create(user=user, **_token_options(payload.validated_data))
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
        tokens = ApiToken.objects.filter(user=self.request.user).select_related("team")
        bound = token_team_id(self.request.user)  # a team-bound token sees its team's tokens only
        return tokens if bound is None else tokens.filter(team_id=bound)

    @extend_schema(request=TokenCreateSerializer, responses={201: NewTokenSerializer})
    def create(self, request: Request) -> Response:
        payload = TokenCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        token, raw = token_create(user=request.user, **_token_options(payload.validated_data))
        token.token = raw  # type: ignore[attr-defined]
        return Response(NewTokenSerializer(token).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: ApiToken) -> None:
        token_revoke(token=instance, actor=self.request.user)
