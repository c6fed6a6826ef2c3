"""The run detail's hot read, answered in front of Django's handler (webapp/wsgi.py calls `answer`).

`GET /api/runs/<id>/` with a token, of a finished run, is what a team's dashboards and scripts poll
most. Its answer (webapp/runs/api.py::run_detail_route, the kept document) was a third of each
request's Python; Django's handler around it, the middleware chain and URL resolution, were as
much again (docs/benchmarks.md "API under load"). Here, before the handler, a request of exactly
that shape is answered by the same route's `kept_answer` on a Django request built from the same
environ, wrapped by the middleware whose work applies to it, called as the chain would call them:

- SecurityMiddleware (its HTTPS redirect, then its headers), CommonMiddleware (the disallowed
  user agents, the host check against ALLOWED_HOSTS, Content-Length) and XFrameOptionsMiddleware;
- the others have nothing to do for such a request and are not called: WhiteNoise (not a static
  path), sessions, CSRF, django.contrib.auth and messages (a token's GET reads none of them; the
  route checks the token itself), the API's error envelope (a 200) and django-axes (sign-in only).

Whatever else comes (another path, a query, another method, no kept document, an invalid token, a
redirect or refusal by a middleware, an error) is left to Django, which answers it as it always
did. The answer is the one Django's whole stack gives, status, headers and body
(tests/webapp/runs/test_hot_read.py compares them through webapp/wsgi.py). It is on only while
`settings.MIDDLEWARE` is the list above was read from and /api/runs/1/ resolves to the run detail
route: a new middleware or a moved route turns it off, and that test says so.

Django's request signals are sent for an answered request as for any other, once each:
`request_started` when the answer is made, `request_finished` when webapp/wsgi.py closes it, its
body in hand, just before the server sends it (their receivers close database connections that
are unusable or past CONN_MAX_AGE, so the next request finds a checked one; a connection that
broke in between makes the read raise, and Django answers).
A request left to Django gets Django's signals.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import cache
from typing import Any

from django.conf import settings
from django.core import signals
from django.core.exceptions import DisallowedHost, PermissionDenied
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import Resolver404, resolve

log = logging.getLogger(__name__)

# The middleware list the module's description was read from; another one turns the hot read off.
# A copy of webapp/settings.py's on purpose, not an import: a middleware added there turns the hot
# read off (one warning at start) until someone checks this module against it.
MIDDLEWARE = (
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "webapp.api.errors.ApiErrorMiddleware",
    "axes.middleware.AxesMiddleware",
)
DETAIL_PATH = re.compile(r"/api/runs/([0-9]{1,19})/")
# What a route must carry to be answered here (webapp/runs/api.py::run_detail_route sets it).
KEPT_ANSWER = "kept_answer"

KeptAnswer = Callable[[HttpRequest, str], HttpResponse | None]


def _unused(request: HttpRequest) -> HttpResponse:
    raise AssertionError("the hot read calls the middleware's hooks, never the chain")


class _Chain:
    """The middleware that applies to the hot read, outermost first, as settings configure them."""

    def __init__(self) -> None:
        self.security = SecurityMiddleware(_unused)
        self.common = CommonMiddleware(_unused)
        self.frame = XFrameOptionsMiddleware(_unused)

    def refuses(self, request: HttpRequest) -> bool:
        """Whether a request hook would answer instead of the view (a redirect, a refusal)."""
        try:
            return (self.security.process_request(request) is not None
                    or self.common.process_request(request) is not None)
        except (DisallowedHost, PermissionDenied):
            return True

    def finish(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        """The response hooks, innermost first."""
        response = self.frame.process_response(request, response)
        response = self.common.process_response(request, response)
        return self.security.process_response(request, response)


@cache
def _setup() -> tuple[KeptAnswer, _Chain] | None:
    """The run detail route's kept answer and the chain, or None when the hot read is off."""
    if tuple(settings.MIDDLEWARE) != MIDDLEWARE:
        log.warning("The run detail's hot read is off: MIDDLEWARE is not the list webapp/hot_read.py "
                    "was written for.")
        return None
    try:
        match = resolve("/api/runs/1/")
    except Resolver404:
        match = None
    kept_answer = getattr(match.func, KEPT_ANSWER, None) if match is not None else None
    if match is None or match.url_name != "run-detail" or kept_answer is None:
        log.warning("The run detail's hot read is off: /api/runs/<id>/ is not webapp/runs/api.py's route.")
        return None
    return kept_answer, _Chain()


@receiver(setting_changed)
def _settings_changed(**_: Any) -> None:
    """The middleware read their settings when made: made again after a change (tests)."""
    _setup.cache_clear()


def enabled() -> bool:
    """Whether the hot read answers (the settings and URLs it was written for)."""
    return _setup() is not None


def answer(environ: dict[str, Any]) -> HttpResponse | None:
    """The answer to a WSGI request when it is the hot read and its document is kept, else None."""
    if environ.get("REQUEST_METHOD") != "GET" or environ.get("QUERY_STRING"):
        return None
    match = DETAIL_PATH.fullmatch(environ.get("PATH_INFO", ""))
    if match is None:
        return None
    setup = _setup()
    if setup is None:
        return None
    kept_answer, chain = setup
    # No close_old_connections() first: the last request's request_finished closed an obsolete
    # connection, and one that broke since makes the read raise, and Django then answers it after
    # its own request_started has closed that connection.
    request = WSGIRequest(environ)
    try:
        response = None if chain.refuses(request) else kept_answer(request, match.group(1))
    except Exception:  # Django answers it instead, through its error handling
        log.exception("The run detail's hot read failed; Django's handler answers the request.")
        response = None
    if response is None:
        return None  # Django's handler sends the request's signals
    signals.request_started.send(sender=WSGIHandler, environ=environ)
    response = chain.finish(request, response)
    response._handler_class = WSGIHandler  # its close() sends request_finished
    return response
