"""API authentication: `Authorization: Bearer <token>` and the browser's session (with CSRF)."""

from __future__ import annotations

from typing import Any

from rest_framework import HTTP_HEADER_ENCODING, authentication, exceptions
from rest_framework.request import Request

from webapp.accounts.selectors import token_for_secret
from webapp.accounts.services import token_touch

KEYWORD = "Bearer"


def bearer_secret(request: Request) -> str | None:
    """The token of `Authorization: Bearer <token>`; None when no Bearer header is sent.

    AuthenticationFailed for a malformed one.
    """
    # META, not DRF's get_authorization_header: its request.headers copies every header first.
    header = request.META.get("HTTP_AUTHORIZATION", "").encode(HTTP_HEADER_ENCODING).split()
    if not header or header[0].lower() != KEYWORD.lower().encode():
        return None
    if len(header) != 2:
        raise exceptions.AuthenticationFailed("Invalid Authorization header: expected 'Bearer <token>'.")
    try:
        return header[1].decode("ascii")
    except UnicodeDecodeError as exc:
        raise exceptions.AuthenticationFailed("Invalid token.") from exc


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """Authenticates `Authorization: Bearer nl_...` with a personal API token."""

    keyword = KEYWORD

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        """Return (user, token) for a valid token, None when no Bearer header is sent."""
        raw = bearer_secret(request)
        if raw is None:
            return None
        token = token_for_secret(raw_token=raw)
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        token_touch(token=token)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        """Makes DRF answer unauthenticated requests with 401 (not 403)."""
        return f'{self.keyword} realm="api"'


class SessionAuthentication(authentication.SessionAuthentication):
    """Django session login for the browser app; unsafe methods need the CSRF token."""
