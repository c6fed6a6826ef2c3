"""The web tier of webapp/serve.py as a deployment runs it: the front, the HTTP and stream servers.

A stack of its own (it locks its address out and kills its web tier): the sign-in lockout counts the
address the front saw, whatever a client writes in the header that carries it, and a revoked
token is refused by every process at once; a body the API
answers without reading (a 404 before the form is parsed, a 413) leaves the connection usable, so
every such request on one kept-alive connection gets its own answer; the servers end with their
supervisor, however it ends, and a new one starts on the same port.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import httpx
import pytest

from tests.stack.stack import RedisServer, ServiceStack, proc_stat
from tests.stack.test_run_e2e import wait_status
from webapp.serve import front_available

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tier(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not RedisServer.available():
        pytest.skip("needs Redis")
    with ServiceStack(tmp_path_factory.mktemp("web-tier"), RedisServer.shared(db=5)) as stack:
        yield stack


def _alive(pid: int) -> bool:
    fields = proc_stat(pid)
    return fields is not None and fields[0] != "Z"


def test_a_client_cannot_name_its_own_address_to_escape_the_sign_in_lockout(tier: ServiceStack) -> None:
    from django.conf import settings

    AXES_FAILURE_LIMIT = settings.AXES_FAILURE_LIMIT  # noqa: N806 (the servers' setting, by its name)
    codes = []
    for i in range(AXES_FAILURE_LIMIT + 2):
        answer = httpx.post(
            f"{tier.base}/api/auth/token/", json={"username": "admin_a", "password": "wrong"},
            headers={"X-Netloom-Client-Addr": f"10.1.{i}.9", "X-Forwarded-For": f"10.2.{i}.9"}, timeout=30,
        )
        codes.append(answer.status_code)
    # Every attempt counted against the one address the front saw: the header was overwritten.
    assert codes[: AXES_FAILURE_LIMIT - 1] == [400] * (AXES_FAILURE_LIMIT - 1), codes
    assert codes[-1] == 429, codes
    assert answer.json()["error"]["code"] == "locked_out"


BOUNDARY = "netloom-test"


def test_every_request_whose_body_is_answered_unread_gets_its_own_answer(tier: ServiceStack) -> None:
    """granian closed a connection whose body was not read to its end; the front, reusing it, then
    answered 502, or cut an answer off after its headers (schemathesis found the second)."""
    from webapp.api.body_limit import largest_limit, limit_for

    form = f"--{BOUNDARY}\r\n".encode() + b"x" * 200_000 + f"--{BOUNDARY}--\r\n".encode()
    json_over = b'{"name": "' + b"x" * limit_for(b"application/json") + b'"}'
    answers: list[tuple[int, str]] = []
    with httpx.Client(base_url=tier.base, headers={"Authorization": f"Bearer {tier.token('a')}"},
                      timeout=60) as client:
        for i in range(60):
            if i % 3 == 2:  # over the JSON limit, within what the front lets through
                answer = client.post("/api/graphs/", content=json_over, headers={"Content-Type": "application/json"})
            else:  # a form for a revision that is not there: 404 before the form is read
                answer = client.post("/api/graphs/999999/revisions/1/weights/", content=form,
                                     headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
            is_json = answer.headers.get("content-type") == "application/json"
            answers.append((answer.status_code, answer.json()["error"]["code"] if is_json else answer.text[:80]))
        # Larger than any request may send: the front refuses it itself, with the API's answer.
        answer = client.post("/api/datasets/upload/", content=b"0" * (largest_limit() + 1),
                             headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
        assert answer.status_code == 413, answer.text
        assert answer.json()["error"] == {"code": "payload_too_large", "fields": {}, "message":
                                          f"The request body is larger than the limit of {largest_limit()} bytes."}
        assert client.get("/api/graphs/").status_code == 200  # and the connection still serves
    expected = [(413, "payload_too_large") if i % 3 == 2 else (404, "not_found") for i in range(60)]
    assert answers == expected


def test_a_revoked_token_is_refused_through_the_front_on_the_next_request(tier: ServiceStack) -> None:
    """A finished run's detail and the token's lookup are kept in the cache that every web process
    shares (webapp/runs/api/detail.py, webapp/accounts/selectors.py); a revoke drops the lookup, so a
    request after it is refused by whichever process answers, whatever header a client adds."""
    run = tier.create_run(epochs=1)
    wait_status(tier, run["id"], {"succeeded"})
    made = tier.api("a").post("/api/auth/tokens/", json={"name": "stamped"})
    assert made.status_code == 201, made.text
    url = f"{tier.base}/api/runs/{run['id']}/"
    claimed = f"{time.time():.3f}"
    headers = {"Authorization": f"Bearer {made.json()['token']}"}
    for _ in range(4):  # the document and the token's lookup kept
        assert httpx.get(url, headers=headers, timeout=30).status_code == 200
    assert tier.api("a").request("DELETE", f"/api/auth/tokens/{made.json()['id']}/").status_code == 204
    codes = [httpx.get(url, headers={**headers, "X-Netloom-Received": claimed}, timeout=30).status_code
             for _ in range(4)]
    assert codes == [401] * 4


@pytest.mark.skipif(not front_available(), reason="needs nginx (the front): apt-get install nginx-light")
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["stopped", "killed"])
def test_the_servers_end_with_their_supervisor_and_a_new_tier_takes_the_port(tier: ServiceStack, how: int) -> None:
    assert tier.web is not None
    tier_pids = tier.web_pids()
    assert len(tier_pids) >= 5, f"supervisor, nginx master and worker, granian, uvicorn: {tier_pids}"
    os.kill(tier.web.pid, how)
    tier.web.wait(20)
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in tier_pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in tier_pids if _alive(pid)], "servers outlived their supervisor"
    tier.start_web()
    answer = httpx.get(f"{tier.base}/healthz", timeout=30)
    assert answer.status_code == 200 and answer.json()["status"] == "ok"
    assert answer.headers.get("server") == "nginx"
