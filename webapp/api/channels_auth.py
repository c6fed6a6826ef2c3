"""WebSocket authentication: the browser's session cookie, or an API token for other clients.

A token is read from `Authorization: Bearer <token>` (clients that can set headers) or from
the `token` query parameter (clients that cannot). The consumer still checks team access. A
stream is a read: any live token may open one; a team-bound token's user carries its team
(selectors.user_for_token), so only that team's runs are visible. An expired or revoked token
is no user at all (the consumer closes with 4401), and open streams re-check both.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.security.websocket import OriginValidator
from django.conf import settings


@database_sync_to_async
def _token_for(raw: str) -> Any:
    from webapp.accounts.selectors import token_allows, token_for_secret, user_for_token

    token = token_for_secret(raw_token=raw)
    if token is None or not token.user.is_active or not token_allows(token, method="GET"):
        return None
    user_for_token(token)
    return token


def _token_from_scope(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            parts = value.decode("latin-1").split()
            if len(parts) == 2 and parts[0].lower() == "bearer":
                return parts[1]
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    tokens = query.get("token")
    return tokens[0] if tokens else None


class TokenAuthMiddleware(BaseMiddleware):
    """Sets scope["user"] from an API token when one is given (after the session middleware)."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        raw = _token_from_scope(scope)
        if raw:
            token = await _token_for(raw)
            if token is not None:
                # The token's id stays in the scope: an open stream re-checks it (revocation).
                scope = dict(scope, user=token.user, auth_token_id=token.pk)
            else:
                from django.contrib.auth.models import AnonymousUser

                scope = dict(scope, user=AnonymousUser())
        return await super().__call__(scope, receive, send)


def TokenAuthMiddlewareStack(inner: Any) -> Any:  # noqa: N802 (Channels' naming)
    """Session + token authentication for WebSocket routes."""
    return AuthMiddlewareStack(TokenAuthMiddleware(inner))


class _OriginValidator(OriginValidator):
    """Browsers always send Origin: check it. Clients without one (scripts) rely on their token."""

    def valid_origin(self, parsed_origin: Any) -> bool:
        """Accept a missing Origin; otherwise it must name an allowed host."""
        if parsed_origin is None:
            return True
        return super().valid_origin(parsed_origin)


def allowed_hosts_origin_validator(inner: Any) -> Any:
    """Refuse cross-site WebSocket handshakes (the session cookie would ride along)."""
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = ["localhost", "127.0.0.1", "[::1]"]
    return _OriginValidator(inner, allowed)
