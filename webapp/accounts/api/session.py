"""The browser session: CSRF cookie, login, how one signs in here, logout, who am I."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import login, logout
from django.middleware.csrf import get_token
from django.urls import reverse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.authentication import CSRFCheck
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.lockout import SIGN_IN_SCOPE, SignInRateThrottle

from ..models import Role
from ..selectors import memberships_for_user
from .passwords import CredentialsSerializer, _check_credentials, _require_local_passwords


class UserTeamSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=Role.choices)


class MeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    teams = UserTeamSerializer(many=True)


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
        _require_local_passwords()
        payload = CredentialsSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        user = _check_credentials(request, payload.validated_data)
        login(request._request, user)
        return Response(me_payload(user))


class SsoConfigSerializer(serializers.Serializer):
    name = serializers.CharField(help_text='The button\'s "Sign in with <name>".')
    login_url = serializers.CharField(help_text="Where the browser goes to sign in (add ?next=<path>).")


class AuthConfigSerializer(serializers.Serializer):
    password_sign_in = serializers.BooleanField(help_text="The username and password form works.")
    sso = SsoConfigSerializer(allow_null=True, help_text="Single sign-on, when set up.")


class AuthConfigView(APIView):
    """GET /api/auth/config/: how one signs in here (the sign-in page draws itself from it)."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(responses=AuthConfigSerializer)
    def get(self, request: Request) -> Response:
        sso = None
        if settings.NETLOOM_OIDC_ENABLED:
            sso = {"name": settings.NETLOOM_OIDC_NAME, "login_url": reverse("oidc_authentication_init")}
        return Response({"password_sign_in": settings.NETLOOM_LOCAL_PASSWORDS, "sso": sso})


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
