"""No secret in any log a running stack writes, and sign-ins behind a trusted proxy.

A stack of its own at a deployment's log level (INFO; the web tier at info, so nginx and uvicorn log
every request), once behind the front (nginx, granian, uvicorn) and once with uvicorn alone. It is
used the ways a secret reaches a server: a new token over REST in the Authorization header (and,
wrongly, in a query), over a WebSocket with `?token=`, a wrong token on a stream, failed password
sign-ins (API, browser, the admin's form). Then every file the stack wrote (web, workers) is read:
neither the token nor the password may appear, and the stream's request is there, redacted.

The stack trusts 127.0.0.1 as a proxy (NETLOOM_TRUSTED_PROXIES): through the real front the
sign-in lockout counts the client a proxy forwarded for, one account and address at a time.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import urllib.parse
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.stack.stack import RedisServer, ServiceStack
from tests.stack.test_run_e2e import read_until, wait_status
from webapp.serve import front_available

pytestmark = pytest.mark.slow

WRONG_PASSWORD = f"hunter2-{secrets.token_hex(6)}"
FRONTS = ["nginx", "none"] if front_available() else ["none"]


@pytest.fixture(scope="module", params=FRONTS, ids=lambda front: f"front-{front}")
def tier(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not RedisServer.available():
        pytest.skip("needs Redis")
    env = {"NETLOOM_E2E_LOG_LEVEL": "INFO", "NETLOOM_WEB_LOG_LEVEL": "info", "NETLOOM_WEB_FRONT": request.param,
           "NETLOOM_TRUSTED_PROXIES": "127.0.0.1"}
    with ServiceStack(tmp_path_factory.mktemp(f"secrets-{request.param}"), RedisServer.shared(db=5),
                      env=env) as stack:
        yield stack


def _written_files(stack: ServiceStack) -> dict[Path, bytes]:
    """Every file under the stack's folder but the database and the media (the data, not logs)."""
    return {path: path.read_bytes() for path in stack.tmp.rglob("*")
            if path.is_file() and "netloom.sqlite3" not in path.name and "media" not in path.parts}


async def _stream_with_query_token(stack: ServiceStack, run_id: int, token: str) -> None:
    query = urllib.parse.urlencode({"token": token, "since": 0})
    async with connect(f"ws://127.0.0.1:{stack.port}/ws/runs/{run_id}/?{query}") as ws:
        await read_until(ws, lambda frame: frame.get("type") == "replayed")
    # A token that is no one's: refused, and logged without it.
    try:
        async with connect(f"ws://127.0.0.1:{stack.port}/ws/runs/{run_id}/?token=nl_{secrets.token_urlsafe(32)}") as ws:
            await ws.recv()
    except (ConnectionClosed, InvalidStatus):
        pass


def test_behind_a_trusted_proxy_each_client_and_account_is_locked_apart(tier: ServiceStack) -> None:
    from django.conf import settings

    limit = settings.AXES_FAILURE_LIMIT

    def sign_in(password: str, forwarded_for: str | None, username: str = "admin_a") -> httpx.Response:
        headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
        return httpx.post(f"{tier.base}/api/auth/token/", json={"username": username, "password": password},
                          headers=headers, timeout=30)

    codes = [sign_in("wrong", "198.51.100.7").status_code for _ in range(limit + 2)]
    assert codes[-1] == 429 and sign_in("pw", "198.51.100.7").status_code == 429, codes
    # The same account for another client behind the proxy, another account for the same client.
    assert sign_in("pw", "198.51.100.8").status_code == 201
    assert sign_in("pw", "198.51.100.7", username="admin_b").status_code == 201
    assert sign_in("pw", None).status_code == 201  # the proxy's own address


def test_no_token_or_password_reaches_any_log(tier: ServiceStack) -> None:
    base = tier.base
    made = httpx.post(f"{base}/api/auth/token/", json={"username": "admin_a", "password": "pw", "name": "logs"},
                      timeout=30)
    assert made.status_code == 201, made.text
    token = made.json()["token"]
    bearer = {"Authorization": f"Bearer {token}"}
    # REST: the header, and a token in a query where it does not belong.
    assert httpx.get(f"{base}/api/auth/me/", headers=bearer, timeout=30).status_code == 200
    assert httpx.get(f"{base}/api/graphs/?token={token}&page=1", headers=bearer, timeout=30).status_code == 200
    assert httpx.get(f"{base}/api/nowhere/?token={token}", timeout=30).status_code in (401, 404)
    assert httpx.get(f"{base}/api/nowhere/?password={WRONG_PASSWORD}&x=1&token={token}",
                     timeout=30).status_code in (401, 404)
    # The stream, with the token in its query.
    run = tier.create_run(epochs=1)
    wait_status(tier, run["id"], {"succeeded"})
    asyncio.run(_stream_with_query_token(tier, run["id"], token))
    # Failed password sign-ins: the API's, the browser's, the admin's form.
    wrong = {"username": "admin_b", "password": WRONG_PASSWORD}
    assert httpx.post(f"{base}/api/auth/token/", json=wrong, timeout=30).status_code == 400
    with httpx.Client(base_url=base, timeout=30) as browser:
        csrf = browser.get("/api/auth/csrf/").json()["csrf_token"]
        assert browser.post("/api/auth/login/", json=wrong, headers={"X-CSRFToken": csrf}).status_code == 400
        browser.get("/admin/login/")
        form = {**wrong, "csrfmiddlewaretoken": browser.cookies["csrftoken"], "next": "/admin/"}
        assert browser.post("/admin/login/", data=form).status_code == 200
    tier.stop()  # every process flushes and ends: what they wrote is all there is (the stack's last test)

    files = _written_files(tier)
    assert any(path.name == "web.log" for path in files) and any(path.name.startswith("worker") for path in files)
    for path, content in files.items():
        for secret in (token, token.removeprefix("nl_"), WRONG_PASSWORD):
            assert secret.encode() not in content, f"{path.name} holds a secret:\n{_around(content, secret)}"
    web_log = files[tier.tmp / "web.log"].decode(errors="replace")
    # The requests are in the access log (nginx's, or uvicorn's alone), their tokens hidden.
    assert '"GET /api/graphs/?token=[REDACTED]&page=1 HTTP/1.1" 200' in web_log, web_log[-3000:]
    assert re.search(rf"/ws/runs/{run['id']}/\?token=\[REDACTED\]&since=0", web_log), web_log[-3000:]


def _around(content: bytes, secret: str) -> str:
    at = content.find(secret.encode())
    return content[max(0, at - 300):at + 100].decode(errors="replace")
