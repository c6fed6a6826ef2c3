"""API authentication: `Authorization: Bearer <token>` and the browser's session (with CSRF).

A token is also where its limits are enforced, once for every DRF view (whatever its
permission_classes): an expired or revoked token is a 401 naming the reason (`token_expired`
with `expires_at`, `token_revoked`); a read token's write is a 403 `token_scope` before the view
runs; a team-bound token's user carries the team, and every team lookup narrows to it
(webapp/accounts/selectors.py memberships_of), so other teams' objects are 404 like anyone's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from rest_framework import HTTP_HEADER_ENCODING, authentication, exceptions, status
from rest_framework.request import Request

from webapp.accounts.models import TokenScope
from webapp.accounts.selectors import (
    READ_METHODS,
    token_allows,
    token_expired,
    token_find,
    user_for_token,
)
from webapp.accounts.services.tokens import token_touch
from webapp.api.errors import ApiError

KEYWORD = "Bearer"

Handler = TypeVar("Handler", bound=Callable[..., Any])


def reads_only(handler: Handler) -> Handler:
    """Mark a view's handler (or action) that changes nothing whatever its method (a prediction,
    a validation): a read token may call it. Every other POST/PUT/PATCH/DELETE is a write."""
    handler.token_reads = True  # type: ignore[attr-defined]
    return handler


def handler_reads(request: Request) -> bool:
    """Whether the view handling `request` marked its handler `reads_only`."""
    match = getattr(request._request, "resolver_match", None)
    func = getattr(match, "func", None)
    view_class = getattr(func, "cls", None) or getattr(func, "view_class", None)
    if view_class is None:
        return False
    method = request.method.lower()
    actions = getattr(func, "actions", None)  # a ViewSet: method -> action name
    name = actions.get(method) if actions else method
    return bool(name and getattr(getattr(view_class, name, None), "token_reads", False))


class TokenRefused(ApiError, exceptions.AuthenticationFailed):
    """401 for a token that no longer signs in, with the reason as its code (DRF adds the
    WWW-Authenticate header of an AuthenticationFailed)."""


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
        """Return (user, token) for a valid token, None when no Bearer header is sent.

        401 for an unknown, revoked or expired token (or an inactive user); 403 `token_scope`
        when a read token asks for a write.
        """
        raw = bearer_secret(request)
        if raw is None:
            return None
        token = token_find(raw_token=raw)
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        if token.revoked_at is not None:
            raise TokenRefused(status.HTTP_401_UNAUTHORIZED, "token_revoked",
                               "This token was revoked; sign in again for a new one.",
                               extra={"revoked_at": token.revoked_at.isoformat()})
        if token_expired(token):
            assert token.expires_at is not None
            raise TokenRefused(status.HTTP_401_UNAUTHORIZED, "token_expired",
                               f"This token expired at {token.expires_at.isoformat()}; "
                               "sign in again for a new one.",
                               extra={"expires_at": token.expires_at.isoformat()})
        # The view is looked at only for a read token's non-GET (the common request pays nothing).
        reads = token.scope == TokenScope.READ and request.method not in READ_METHODS and handler_reads(request)
        if not token_allows(token, method=request.method, reads=reads):
            raise ApiError(status.HTTP_403_FORBIDDEN, "token_scope",
                           f"This token's scope is {token.scope!r}: it may read, not "
                           f"{request.method} here. Use a token with the write scope.",
                           extra={"scope": token.scope})
        token_touch(token=token)
        return user_for_token(token), token

    def authenticate_header(self, request: Request) -> str:
        """Makes DRF answer unauthenticated requests with 401 (not 403)."""
        return f'{self.keyword} realm="api"'


class SessionAuthentication(authentication.SessionAuthentication):
    """Django session login for the browser app; unsafe methods need the CSRF token."""
