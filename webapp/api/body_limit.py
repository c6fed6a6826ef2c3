"""An ASGI guard that refuses an oversized or unsized request body before Django reads any of it.

A declared `Content-Length` over the limit is answered 413 at once. A body sent without one
(`Transfer-Encoding: chunked`) is answered 411: Django and DRF read such a body as empty, so the
view would have answered about fields it never saw (and Django's ASGI handler, with
NETLOOM_HTTP_HANDLER=asgi, would first have copied the whole body to a file). What Django is
handed is still counted as it streams and cut off at the limit. Multipart bodies
(dataset uploads) may be as large as NETLOOM_MAX_UPLOAD_BYTES plus the form's framing; every
other body as large as DATA_UPLOAD_MAX_MEMORY_SIZE plus a little.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Multipart framing and the small form fields around the file; headroom for a JSON body's
# own limit (Django answers an over-limit JSON body 413 itself, with the API's error body).
ENVELOPE_BYTES = 64 * 1024


class BodyTooLarge(Exception):
    """Raised into Django's body reader when a streamed body passes its limit."""


def body_limit(scope: Scope) -> int:
    """The most bytes a request with these headers may send."""
    content_type = b""
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            content_type = value.lower()
            break
    if content_type.startswith(b"multipart/"):
        return int(settings.NETLOOM_MAX_UPLOAD_BYTES) + ENVELOPE_BYTES
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) + ENVELOPE_BYTES


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def has_unsized_body(scope: Scope) -> bool:
    """Whether the request's body comes without a declared length (chunked)."""
    for name, value in scope.get("headers", ()):
        if name == b"transfer-encoding" and value.strip().lower() != b"identity":
            return _declared_length(scope) is None
    return False


async def _answer_413(send: Send, limit: int) -> None:
    await _answer(send, 413, "payload_too_large", f"The request body is larger than the limit of {limit} bytes.")


async def _answer(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message, "fields": {}}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def limit_request_body(app: ASGIApp) -> ASGIApp:
    """Wrap an ASGI HTTP app so that no request body past its limit reaches it."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if has_unsized_body(scope):
            # Django and DRF read a body without a Content-Length as empty: the view would answer
            # "field required" for a body it never read. Say what is wrong instead, before any byte.
            await _answer(
                send, 411, "length_required",
                "The request body has no Content-Length: send it with one "
                "(chunked request bodies are not accepted).",
            )
            return
        limit = body_limit(scope)
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            await _answer_413(send, limit)
            return
        received = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await app(scope, counted_receive, tracked_send)
        except BodyTooLarge:
            if not started:
                await _answer_413(send, limit)

    return guarded
