"""WSGI entry point: Django's WSGI handler for every HTTP request, behind the front (webapp/serve.py).

granian serves this on a private Unix socket that only the front (nginx) reaches, so one thing
the front says is taken as true: `X-Netloom-Client-Addr` is the client's address (the front sets
it from the connection and overwrites any a client sent): Django, and django-axes's sign-in
lockout, see the real client, not the front, as REMOTE_ADDR. Every other header is the client's own.
A body over its limit, or one without a Content-Length, is refused before Django reads a byte
(webapp/api/body_limit.py `refusal`, the rule the ASGI path applies too); Django itself never reads
past the declared Content-Length (its LimitedStream).

Whatever of a taken body Django left unread (a 404 or 403 answered before the form was parsed) is
read and dropped before the answer goes back. granian closes a connection whose request body was
not read to its end, and the front, which keeps its connections to granian open and streams the
body while the answer is made, then saw the connection reset under it: a 502, an answer cut off
after its headers, or the next request on that connection refused (about one in forty requests
with a body, in a loop of mixed ones). The body is within its limit here, so the read is bounded.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
django_application = get_wsgi_application()

from webapp.api.body_limit import largest_limit, refusal  # noqa: E402  (after Django is set up)
from webapp.serving import settle_for_serving  # noqa: E402

CLIENT_ADDR = "HTTP_X_NETLOOM_CLIENT_ADDR"


def _encoded(environ: dict[str, Any], name: str) -> bytes | None:
    value = environ.get(name)
    return value.encode("latin-1") if isinstance(value, str) and value != "" else None


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Django for one request, after the body guard; REMOTE_ADDR is the front's word for the client."""
    client = environ.pop(CLIENT_ADDR, None)
    if client:
        environ["REMOTE_ADDR"] = client
    refused = refusal(content_type=_encoded(environ, "CONTENT_TYPE") or b"",
                      content_length=_encoded(environ, "CONTENT_LENGTH"),
                      transfer_encoding=_encoded(environ, "HTTP_TRANSFER_ENCODING"))
    if refused is not None:
        status, body = refused
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        declared = environ.get("CONTENT_LENGTH")
        if declared and declared.isascii() and declared.isdigit() and int(declared) <= largest_limit():
            _drain(environ.get("wsgi.input"))  # the front sends no more than this
        else:
            headers.append(("Connection", "close"))
        start_response(f"{status} {HTTPStatus(status).phrase}", headers)
        return [body]
    response = django_application(environ, start_response)
    _drain(environ.get("wsgi.input"))
    return response


DRAIN_CHUNK = 256 * 1024


def _drain(stream: Any) -> None:
    """Read what is left of the request body, so the connection it came on stays usable."""
    if stream is None:
        return
    while stream.read(DRAIN_CHUNK):
        pass


settle_for_serving()  # the request code imported before the first request (webapp/serving.py)
