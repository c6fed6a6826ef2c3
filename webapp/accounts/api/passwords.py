"""Passwords over the API: the sign-in form's fields and checks (tokens and sessions share
them), and POST /api/auth/password/."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate, update_session_auth_hash
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.errors import ApiError
from webapp.api.lockout import SIGN_IN_SCOPE, SignInRateThrottle, password_sign_in_off_message
from webapp.api.serializers import StrictSerializer

from ..services.users import user_password_change


class CredentialsSerializer(StrictSerializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=512, trim_whitespace=False)


class PasswordChangeSerializer(StrictSerializer):
    old_password = serializers.CharField(max_length=512, trim_whitespace=False)
    new_password = serializers.CharField(max_length=512, trim_whitespace=False)


def _require_local_passwords() -> None:
    """403 `password_sign_in_off`, naming SSO, while NETLOOM_LOCAL_PASSWORDS is off."""
    if not settings.NETLOOM_LOCAL_PASSWORDS:
        raise ApiError(status.HTTP_403_FORBIDDEN, "password_sign_in_off", password_sign_in_off_message())


def _check_credentials(request: Request, data: dict[str, Any]) -> Any:
    user = authenticate(request._request, username=data["username"], password=data["password"])
    if user is None or not user.is_active:
        raise ApiError(
            status.HTTP_400_BAD_REQUEST,
            "invalid_credentials",
            "Unknown username or wrong password.",
        )
    return user


class PasswordChangeView(APIView):
    """POST /api/auth/password/: change the signed-in user's password.

    This session stays signed in (update_session_auth_hash); the user's other sessions end;
    API tokens stay valid (revoke them on the profile page).
    """

    # A wrong old password is a password guess: counted like a sign-in per client address.
    throttle_classes = [SignInRateThrottle]
    throttle_scope = SIGN_IN_SCOPE

    @extend_schema(request=PasswordChangeSerializer, responses={204: None})
    def post(self, request: Request) -> Response:
        payload = PasswordChangeSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        user_password_change(
            user=request.user,
            old_password=payload.validated_data["old_password"],
            new_password=payload.validated_data["new_password"],
        )
        if request.auth is None:  # a session: keep this one signed in
            update_session_auth_hash(request._request, request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
