"""Guards that refuse an oversized or unsized request body before Django reads any of it.

`refusal` is the rule; `limit_request_body` applies it in front of the ASGI application (uvicorn,
when it serves HTTP itself) and webapp/wsgi.py in front of the WSGI one (granian, behind the front).

A declared `Content-Length` over the limit is answered 413 at once. A body sent without one
(`Transfer-Encoding: chunked`) is answered 411 (behind the front it never arrives chunked: nginx
reads it whole, counting it against this limit, and hands it on with a length; webapp/serve.py):
Django and DRF read such a body as empty, so the view would have answered about fields it never
saw (and Django's ASGI handler, with NETLOOM_HTTP_HANDLER=asgi, would first have copied the whole
body to a file). What Django is
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


def limit_for(content_type: bytes) -> int:
    """The most bytes a request of this content type may send."""
    if content_type.lower().startswith(b"multipart/"):
        return int(settings.NETLOOM_MAX_UPLOAD_BYTES) + ENVELOPE_BYTES
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) + ENVELOPE_BYTES


def largest_limit() -> int:
    """The most bytes any request may send: the front refuses a larger declared body itself."""
    return max(limit_for(b"multipart/form-data"), limit_for(b"application/json"))


def too_large_body(content_type: bytes) -> bytes:
    """The API's 413 body for a request of this content type."""
    return _too_large_body(limit_for(content_type))


def _length(value: bytes | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def refusal(*, content_type: bytes, content_length: bytes | None,
            transfer_encoding: bytes | None) -> tuple[int, bytes] | None:
    """(status, JSON body) when a request with these headers is refused before its body is read.

    The one statement of the rule for both servers' guards (ASGI here, WSGI in webapp/wsgi.py).
    """
    declared = _length(content_length)
    if transfer_encoding is not None and transfer_encoding.strip().lower() != b"identity" and declared is None:
        # Django and DRF read a body without a Content-Length as empty: the view would answer
        # "field required" for a body it never read. Say what is wrong instead, before any byte.
        return 411, _error_body("length_required", "The request body has no Content-Length: send it with one "
                                "(chunked request bodies are not accepted).")
    limit = limit_for(content_type)
    if declared is not None and declared > limit:
        return 413, _too_large_body(limit)
    return None


def _too_large_body(limit: int) -> bytes:
    return _error_body("payload_too_large", f"The request body is larger than the limit of {limit} bytes.")


def _error_body(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message, "fields": {}}}).encode()


def _header(scope: Scope, wanted: bytes) -> bytes | None:
    for name, value in scope.get("headers", ()):
        if name == wanted:
            return value
    return None


async def _answer(send: Send, status: int, body: bytes) -> None:
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
        content_type = _header(scope, b"content-type") or b""
        refused = refusal(content_type=content_type, content_length=_header(scope, b"content-length"),
                          transfer_encoding=_header(scope, b"transfer-encoding"))
        if refused is not None:
            await _answer(send, *refused)
            return
        limit = limit_for(content_type)
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
                await _answer(send, 413, _too_large_body(limit))

    return guarded
