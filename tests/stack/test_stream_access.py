"""Open streams against the live stack: they ride out a Redis outage, and close when access ends.

- A WebSocket opened while Redis is down stays open and delivers the run's events from the
  database (the channel layer is only a hint).
- A stream whose token is revoked is closed with 4401 within seconds; one whose user left the
  run's team is closed with 4404.
- A member who joined by invitation keeps their stream when demoted to viewer (viewers read) and
  loses it (4404) when removed; their token then gets 404 on the team.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.stack.stack import E2E_STEP_DELAY, Http, RedisServer, ServiceStack
from tests.stack.test_run_e2e import TIMEOUT, finished, read_until, wait_status, ws_headers

pytestmark = pytest.mark.slow

# An open stream must be closed this soon after its access ends (the hint path).
CLOSE_WITHIN = 8.0


async def _closed_code(ws: Any, within: float) -> tuple[int | None, float]:
    """Read frames until the server closes the socket; its close code and how long it took."""
    start = time.monotonic()
    try:
        while True:
            await asyncio.wait_for(ws.recv(), within - (time.monotonic() - start))
    except ConnectionClosed as closed:
        return (closed.rcvd.code if closed.rcvd else None), time.monotonic() - start
    except TimeoutError:
        return None, time.monotonic() - start


def test_a_revoked_tokens_open_stream_is_closed(stack: ServiceStack) -> None:
    run = stack.create_run(epochs=1)
    admin = stack.api("a")
    made = admin.post("/api/auth/tokens/", json={"name": "watch"})
    assert made.status_code == 201, made.text
    token, token_id = made.json()["token"], made.json()["id"]

    async def watch() -> tuple[int | None, float]:
        headers = {"Authorization": f"Bearer {token}"}
        async with connect(stack.ws_url(run["id"]), additional_headers=headers) as ws:
            await read_until(ws, lambda f: f.get("type") == "replayed")
            revoked = await asyncio.to_thread(admin.request, "DELETE", f"/api/auth/tokens/{token_id}/")
            assert revoked.status_code == 204, revoked.text
            return await _closed_code(ws, CLOSE_WITHIN)

    code, took = asyncio.run(watch())
    assert code == 4401, f"stream not closed for the revoked token after {took:.1f}s"


def test_a_stream_is_closed_when_its_user_leaves_the_team(stack: ServiceStack) -> None:
    run = stack.create_run(epochs=1)
    admin_a, team_a = stack.api("a"), stack.world["a"]["team"]
    added = admin_a.post(f"/api/teams/{team_a}/members/", json={"username": "admin_b", "role": "viewer"})
    assert added.status_code in (200, 201), added.text
    user_b = added.json()["id"]

    async def watch() -> tuple[int | None, float]:
        async with connect(stack.ws_url(run["id"]), additional_headers=ws_headers(stack, "b")) as ws:
            frames = await read_until(ws, lambda f: f.get("type") == "replayed")
            assert frames[0]["type"] == "state" and frames[0]["run"]["id"] == run["id"]
            removed = await asyncio.to_thread(
                admin_a.request, "DELETE", f"/api/teams/{team_a}/members/{user_b}/"
            )
            assert removed.status_code == 204, removed.text
            return await _closed_code(ws, CLOSE_WITHIN)

    code, took = asyncio.run(watch())
    assert code == 4404, f"stream not closed after the user left the team ({took:.1f}s)"


def test_an_invited_members_stream_survives_demotion_and_closes_on_removal(stack: ServiceStack) -> None:
    import uuid

    from tests.stack.stack import Http

    run = stack.create_run(epochs=1)
    admin_a, team_a = stack.api("a"), stack.world["a"]["team"]
    name = f"nora_{uuid.uuid4().hex[:8]}"
    made = admin_a.post(f"/api/teams/{team_a}/invitations/", json={"email": f"{name}@example.org", "role": "editor"})
    assert made.status_code == 201, made.text
    anon = stack.api(None)
    accepted = anon.post(f"/api/invitations/{made.json()['token']}/accept/",
                         json={"username": name, "password": "a-long-enough-password"})
    assert accepted.status_code == 201, accepted.text
    user_id = accepted.json()["user"]["id"]
    signed = anon.post("/api/auth/token/", json={"username": name, "password": "a-long-enough-password"})
    token = signed.json()["token"]
    nora = Http(stack.base, token)

    async def watch() -> tuple[int | None, float, int | None]:
        async with connect(stack.ws_url(run["id"]), additional_headers={"Authorization": f"Bearer {token}"}) as ws:
            await read_until(ws, lambda f: f.get("type") == "replayed")
            demoted = await asyncio.to_thread(
                admin_a.request, "PATCH", f"/api/teams/{team_a}/members/{user_id}/", {"role": "viewer"}
            )
            assert demoted.status_code == 200, demoted.text
            # A viewer still reads: the stream stays open past the re-check.
            still, _ = await _closed_code(ws, 3.0)
            removed = await asyncio.to_thread(admin_a.request, "DELETE", f"/api/teams/{team_a}/members/{user_id}/")
            assert removed.status_code == 204, removed.text
            code, took = await _closed_code(ws, CLOSE_WITHIN)
            return code, took, still

    code, took, still = asyncio.run(watch())
    assert still is None, f"the stream closed ({still}) when its user was only demoted"
    assert code == 4404, f"stream not closed after the member was removed ({took:.1f}s)"
    assert nora.get(f"/api/teams/{team_a}/").status_code == 404


@pytest.mark.skipif(not RedisServer.available(), reason="needs a redis-server binary for a private Redis")
@pytest.mark.one_database
def test_a_stream_opened_while_redis_is_down_stays_open_and_streams_from_the_database(
    tmp_path: Path,
) -> None:
    redis_server = RedisServer.private(tmp_path / "redis")
    with ServiceStack(tmp_path / "stack", redis_server, step_delay=E2E_STEP_DELAY) as stack:
        run = stack.create_run(epochs=40)
        deadline = time.monotonic() + TIMEOUT
        while stack.api("a").get(f"/api/runs/{run['id']}/").json()["progress"]["step"] < 5:
            assert time.monotonic() < deadline, stack.logs()
            time.sleep(0.1)
        redis_server.stop()

        async def watch_through_the_outage() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            async with connect(stack.ws_url(run["id"]), additional_headers=ws_headers(stack, "a")) as ws:
                replay = await read_until(ws, lambda f: f.get("type") == "replayed")
                # Redis stays down for 8 s: the stream must stay open and keep delivering.
                outage: list[dict[str, Any]] = []
                end = time.monotonic() + 8
                while time.monotonic() < end:
                    try:
                        raw = await asyncio.wait_for(ws.recv(), end - time.monotonic())
                    except TimeoutError:
                        break
                    outage.append(json.loads(raw))
                await asyncio.to_thread(redis_server.start)
                rest = await read_until(ws, finished)
                return replay + outage, rest

        during, after = asyncio.run(watch_through_the_outage())
        replayed_to = next(f["seq"] for f in during if f.get("type") == "replayed")
        live_in_outage = [f for f in during if f.get("type") == "metric" and f["seq"] > replayed_to]
        assert live_in_outage, "no event reached the stream while Redis was down"
        seqs = [f["seq"] for f in during + after if "seq" in f and f.get("type") not in ("state", "replayed")]
        # Replayed from 0 and followed to the final status: every event once, none missing.
        assert seqs == list(range(1, seqs[-1] + 1)), "an event was lost, repeated or reordered"
        detail = wait_status(stack, run["id"], {"succeeded", "failed", "cancelled"})
        assert detail["status"] == "succeeded", stack.logs()


def test_a_read_tokens_stream_opens_and_an_expiring_tokens_stream_closes_when_it_ends(stack: ServiceStack) -> None:
    """A read token follows a run on the real server (a stream is a read) and is refused a write;
    a token that expires while its stream is open is closed with 4401 at the next access check."""
    from datetime import UTC, datetime, timedelta

    from webapp.runs.stream.consumers import ACCESS_RECHECK_SECONDS, POLL_SECONDS

    run = stack.create_run(epochs=1)
    admin = stack.api("a")
    made = admin.post("/api/auth/tokens/", json={"name": "watch", "scope": "read"})
    assert made.status_code == 201, made.text
    read = made.json()["token"]
    refused = Http(stack.base, read).post("/api/auth/tokens/", json={"name": "wider"})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "token_scope", refused.text
    life = 10.0  # long enough to open the stream first
    ends = datetime.now(UTC) + timedelta(seconds=life)
    short = admin.post("/api/auth/tokens/", json={"name": "short", "scope": "read", "expires_at": ends.isoformat()})
    assert short.status_code == 201, short.text

    async def watch(token: str, *, until_closed: float | None) -> tuple[list[dict[str, Any]], int | None]:
        async with connect(stack.ws_url(run["id"]) + f"?token={token}") as ws:
            frames = await read_until(ws, lambda f: f.get("type") == "replayed")
            if until_closed is None:
                return frames, None
            code, _ = await _closed_code(ws, until_closed)
            return frames, code

    frames, code = asyncio.run(
        watch(short.json()["token"], until_closed=life + ACCESS_RECHECK_SECONDS + POLL_SECONDS + 5))
    assert frames[0]["type"] == "state"
    assert code == 4401, "the expired token's stream stayed open"
    frames, _ = asyncio.run(watch(read, until_closed=None))
    assert frames[0]["type"] == "state" and frames[0]["run"]["id"] == run["id"]
