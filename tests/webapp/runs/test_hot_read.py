"""webapp/hot_read.py: a token's read of a kept run detail answered in front of Django's handler.

Every request goes through webapp/wsgi.py's `application`, the callable granian serves, with a WSGI
environ as granian builds it; the hot answer is compared with the one Django's whole stack gives.
"""

from __future__ import annotations

import io
import re
import sys
import time
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from django.utils import timezone

from webapp import hot_read, wsgi
from webapp.accounts.models import ApiToken
from webapp.accounts.selectors import token_hash
from webapp.accounts.services import membership_remove, token_revoke
from webapp.runs import detail
from webapp.runs.models import Run, RunStatus
from webapp.runs.services import run_create


def environ(path: str, token: str | None, *, method: str = "GET", query: str = "", scheme: str = "http",
            **headers: str) -> dict[str, Any]:
    env: dict[str, Any] = {
        "REQUEST_METHOD": method, "SCRIPT_NAME": "", "PATH_INFO": path, "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "127.0.0.1:8000", "HTTP_ACCEPT": "*/*",
        "wsgi.version": (1, 0), "wsgi.url_scheme": scheme, "wsgi.input": io.BytesIO(b""), "wsgi.errors": sys.stderr,
        "wsgi.multithread": True, "wsgi.multiprocess": True, "wsgi.run_once": False,
    }
    if token is not None:
        env["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    env.update(headers)
    return env


class Served:
    """What webapp/wsgi.py answered, and whether Django's handler was called for it."""

    def __init__(self, env: dict[str, Any], handler_calls: list[str]) -> None:
        before = len(handler_calls)
        got: dict[str, Any] = {}

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
            got.update(status=status, headers=headers)

        result = wsgi.application(env, start_response)
        try:
            self.body = b"".join(result)
        finally:
            getattr(result, "close", lambda: None)()  # as the server does: request_finished
        self.status: str = got["status"]
        self.headers: list[tuple[str, str]] = sorted(got["headers"])
        self.by_django = len(handler_calls) > before

    def answer(self) -> tuple[str, list[tuple[str, str]], bytes]:
        return self.status, self.headers, self.body


@pytest.fixture(autouse=True)
def connection_kept() -> Any:
    """As Django's test client does: the request signals leave the database connection open (on
    PostgreSQL closing it mid-test would end the test's transaction with it)."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def handler_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths Django's handler was called for; a handler made for each, with the settings then
    (a handler's middleware read their settings when it is made)."""
    calls: list[str] = []

    def counted(env: dict[str, Any], start_response: Any) -> Any:
        calls.append(env["PATH_INFO"])
        return WSGIHandler()(env, start_response)

    monkeypatch.setattr(wsgi, "django_application", counted)
    return calls


@pytest.fixture
def finished(user_a: Any, team_a: Any, revision_a: Any, dataset_a: Any) -> Run:
    detail._documents.clear()
    detail._token_reads.clear()  # SQLite may give a new run the id of one a test before rolled back
    run = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    return run


def token_of(client: Any) -> str:
    return client._credentials["HTTP_AUTHORIZATION"].split()[1]


def test_a_kept_detail_is_answered_before_djangos_handler_as_django_answered_it(api_a, finished, handler_calls):
    assert hot_read.enabled(), "the project's MIDDLEWARE and URLs are the ones the hot read was written for"
    url, token = f"/api/runs/{finished.pk}/", token_of(api_a)
    started: list[int] = []
    finished_signals: list[int] = []

    def on_started(**_: Any) -> None:
        started.append(1)

    def on_finished(**_: Any) -> None:
        finished_signals.append(1)

    signals.request_started.connect(on_started)
    signals.request_finished.connect(on_finished)
    try:
        first = Served(environ(url, token), handler_calls)  # DRF builds and keeps the document
        again = Served(environ(url, token), handler_calls)
    finally:
        signals.request_started.disconnect(on_started)
        signals.request_finished.disconnect(on_finished)
    assert first.by_django and not again.by_django
    assert again.answer() == first.answer()
    assert first.status == "200 OK" and dict(again.headers)["X-Frame-Options"] == "DENY"
    assert (started, finished_signals) == ([1, 1], [1, 1]), "Django's request signals, once per request each"

    # The same answer for an Accept DRF answers with JSON; a rename is Django's answer, then kept again.
    assert Served(environ(url, token, HTTP_ACCEPT="application/json"), handler_calls).answer() == first.answer()
    Run.objects.filter(pk=finished.pk).update(name="renamed")
    renamed = Served(environ(url, token), handler_calls)
    assert renamed.by_django and b'"name":"renamed"' in renamed.body.replace(b" ", b"")
    renamed_again = Served(environ(url, token), handler_calls)
    assert not renamed_again.by_django and renamed_again.answer() == renamed.answer()


def test_every_other_request_is_djangos_answer(api_a, api_b, finished, handler_calls, user_a, team_a, revision_a,
                                               dataset_a):
    url, token = f"/api/runs/{finished.pk}/", token_of(api_a)
    Served(environ(url, token), handler_calls)  # kept
    queued = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
    others = {
        "a host not allowed": (environ(url, token, HTTP_HOST="evil.example"), "400"),
        "a query": (environ(url, token, query=f"team={team_a.pk}"), "200"),
        "HEAD": (environ(url, token, method="HEAD"), "200"),
        "an Accept DRF refuses": (environ(url, token, HTTP_ACCEPT="text/html"), "406"),
        "no token": (environ(url, None), "401"),
        "a token no one has": (environ(url, "nl_" + "0" * 40), "401"),
        "a malformed Authorization": (environ(url, None, HTTP_AUTHORIZATION="Bearer a b"), "401"),
        "another team's member": (environ(url, token_of(api_b)), "404"),
        "a run not finished": (environ(f"/api/runs/{queued.pk}/", token), "200"),
        "an id no row can have": (environ("/api/runs/99999999999999999999/", token), "404"),
        "a sub-resource": (environ(f"/api/runs/{finished.pk}/checkpoints/", token), "200"),
    }
    for what, (env, status) in others.items():
        served = Served(env, handler_calls)
        assert served.by_django, what
        assert served.status.startswith(status), (what, served.status, served.body[:200])


def test_the_security_middlewares_settings_hold_on_the_hot_read(api_a, finished, handler_calls, settings):
    url, token = f"/api/runs/{finished.pk}/", token_of(api_a)
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 3600
    redirected = Served(environ(url, token), handler_calls)
    assert redirected.by_django and redirected.status.startswith("301")
    first = Served(environ(url, token, scheme="https"), handler_calls)
    again = Served(environ(url, token, scheme="https"), handler_calls)
    assert not again.by_django and again.answer() == first.answer()
    assert dict(again.headers)["Strict-Transport-Security"] == "max-age=3600"
    settings.DISALLOWED_USER_AGENTS = [re.compile(r"^curl/")]
    refused = Served(environ(url, token, scheme="https", HTTP_USER_AGENT="curl/8.0"), handler_calls)
    assert refused.by_django and refused.status.startswith("403")


def test_another_middleware_list_turns_the_hot_read_off(api_a, finished, handler_calls, settings):
    url, token = f"/api/runs/{finished.pk}/", token_of(api_a)
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "django.middleware.gzip.GZipMiddleware"]
    assert not hot_read.enabled()
    for _ in range(2):
        served = Served(environ(url, token), handler_calls)
        assert served.by_django and served.status == "200 OK"


def test_a_token_or_member_that_stops_granting_is_djangos_answer_at_once(client_for, make_user, finished, team_a,
                                                                         handler_calls):
    """The token's check and the run's row are one statement on the hot read: each way a token or
    a membership stops granting is seen by the next request, which Django then refuses."""
    url = f"/api/runs/{finished.pk}/"
    users = {what: make_user(what, team_a) for what in ("revoked", "expired", "disabled", "left")}
    tokens = {what: token_of(client_for(user)) for what, user in users.items()}
    for what, token in tokens.items():
        Served(environ(url, token), handler_calls)  # the document kept (the first reader builds it)
        served = Served(environ(url, token), handler_calls)
        assert not served.by_django and served.status == "200 OK", what

    token_revoke(token=ApiToken.objects.get(token_hash=token_hash(tokens["revoked"])))
    ApiToken.objects.filter(token_hash=token_hash(tokens["expired"])).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    get_user_model().objects.filter(pk=users["disabled"].pk).update(is_active=False)
    membership_remove(team=team_a, user=users["left"])
    for what, status in (("revoked", "401"), ("expired", "401"), ("disabled", "401"), ("left", "404")):
        served = Served(environ(url, tokens[what]), handler_calls)
        assert served.by_django and served.status.startswith(status), (what, served.status, served.body[:200])

    # A run id with no row, for a token that grants: Django's 404, not an answer of NULLs.
    missing = Served(environ(f"/api/runs/{finished.pk + 1000}/", token_of(client_for(make_user("other", team_a)))),
                     handler_calls)
    assert missing.by_django and missing.status.startswith("404")


def test_a_request_the_front_received_before_the_last_check_is_answered_by_it(client_for, make_user, finished, team_a,
                                                                              handler_calls):
    """The front's stamp (X-Netloom-Received, webapp/serving.py): a kept read checked after a request
    came in answers it without a statement, even when a revoke has committed since (the two crossed);
    a request that came in after the revoke, or with a stamp too old or not one, is checked and refused."""
    url = f"/api/runs/{finished.pk}/"
    token = token_of(client_for(make_user("stamped", team_a)))
    Served(environ(url, token), handler_calls)  # the document kept
    came_in = time.time()
    time.sleep(2 * detail.RECEIVED_MARGIN + 0.01)
    checked = Served(environ(url, token), handler_calls)  # the token's read kept, checked now
    assert not checked.by_django and checked.status == "200 OK"

    token_revoke(token=ApiToken.objects.get(token_hash=token_hash(token)))
    crossed = Served(environ(url, token, HTTP_X_NETLOOM_RECEIVED=f"{came_in:.3f}"), handler_calls)
    assert not crossed.by_django and crossed.answer() == checked.answer()

    for stamp in (f"{time.time():.3f}", f"{came_in - 2 * detail.RECEIVED_WINDOW:.3f}", "0x1p30", "", None):
        headers = {} if stamp is None else {"HTTP_X_NETLOOM_RECEIVED": stamp}
        refused = Served(environ(url, token, **headers), handler_calls)
        assert refused.by_django and refused.status.startswith("401"), (stamp, refused.status)


def test_a_clock_set_back_after_a_check_does_not_stretch_it(client_for, make_user, finished, team_a, handler_calls,
                                                            monkeypatch):
    """The stamps and the checks read one clock (the wall clock, shared by nginx and the HTTP
    server). Set back after a check, that check would look later than every new stamp for as long
    as the step: it is not used until the clock has passed it again."""
    url = f"/api/runs/{finished.pk}/"
    token = token_of(client_for(make_user("stepped", team_a)))
    Served(environ(url, token), handler_calls)  # the document kept
    assert not Served(environ(url, token), handler_calls).by_django  # the token's read kept, checked now
    token_revoke(token=ApiToken.objects.get(token_hash=token_hash(token)))
    wall = time.time
    monkeypatch.setattr(detail, "time", type("SetBack", (), {"time": staticmethod(lambda: wall() - 60)}))
    refused = Served(environ(url, token, HTTP_X_NETLOOM_RECEIVED=f"{wall() - 60:.3f}"), handler_calls)
    assert refused.by_django and refused.status.startswith("401"), refused.status
