"""The web tier of webapp/serve.py as a deployment runs it: the front, the HTTP and stream servers.

A stack of its own (it locks its address out and kills its web tier): the sign-in lockout counts the
address the front saw, whatever a client writes in the header that carries it; the servers end
with their supervisor, however it ends, and a new one starts on the same port.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import httpx
import pytest

from tests.workers.stack import RedisServer, ServiceStack, proc_stat
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
