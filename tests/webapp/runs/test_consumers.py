"""The run stream consumer: access checks, replay after `since`, live events once, gaps filled."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from webapp.runs.stream.events import GROUP_MESSAGE_TYPE, events_record, run_group
from webapp.runs.stream.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _close_consumer_connections() -> Any:
    """The consumer's queries run on asgiref's worker thread: close its connection afterwards."""
    yield
    from channels.db import database_sync_to_async
    from django.db import connections

    asyncio.run(database_sync_to_async(connections.close_all)())


def communicator(run_id: int, user: Any, since: int | None = None) -> WebsocketCommunicator:
    path = f"/ws/runs/{run_id}/" + (f"?since={since}" if since is not None else "")
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    comm.scope["user"] = user
    return comm


def metric(step: int) -> dict[str, Any]:
    return {"type": "metric", "step": step, "epoch": step / 10, "values": {"train/loss": 1.0 / step}}


async def frames_until(comm: WebsocketCommunicator, done: Any) -> list[dict[str, Any]]:
    frames = []
    while True:
        frame = await comm.receive_json_from(timeout=5)
        frames.append(frame)
        if done(frame):
            return frames


def test_anonymous_and_foreign_users_are_closed_before_joining(run_a: Any, user_b: Any) -> None:
    async def close_code(user: Any) -> int:
        comm = communicator(run_a.pk, user)
        connected, _ = await comm.connect()
        assert connected
        message = await comm.receive_output(timeout=5)
        assert message["type"] == "websocket.close"
        return message["code"]

    assert asyncio.run(close_code(AnonymousUser())) == 4401
    assert asyncio.run(close_code(user_b)) == 4404


def test_replay_after_since_then_live_events_once_and_gaps_from_the_database(run_a: Any, viewer_a: Any) -> None:
    stored = events_record(run_id=run_a.pk, events=[metric(1), metric(2), metric(3)])
    assert [e["seq"] for e in stored] == [2, 3, 4]  # seq 1 is the "queued" status

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        comm = communicator(run_a.pk, viewer_a, since=2)
        await comm.connect()
        replay = await frames_until(comm, lambda f: f["type"] == "replayed")
        layer = get_channel_layer()
        # A hint repeating what was replayed plus one new event: only the new one goes out.
        (new,) = await asyncio.to_thread(events_record, run_id=run_a.pk, events=[metric(4)])
        await layer.group_send(run_group(run_a.pk), {"type": GROUP_MESSAGE_TYPE, "events": stored + [new]})
        live = [await comm.receive_json_from(timeout=5)]
        # Two events whose hint was lost, then a hint for a third: all three arrive, in order.
        lost = await asyncio.to_thread(events_record, run_id=run_a.pk, events=[metric(5), metric(6), metric(7)])
        await layer.group_send(run_group(run_a.pk), {"type": GROUP_MESSAGE_TYPE, "events": lost[-1:]})
        live += [await comm.receive_json_from(timeout=5) for _ in range(3)]
        # The lost hints arriving late change nothing.
        await layer.group_send(run_group(run_a.pk), {"type": GROUP_MESSAGE_TYPE, "events": lost[:2]})
        assert await comm.receive_nothing(timeout=0.3)
        await comm.disconnect()
        return replay, live

    replay, live = asyncio.run(scenario())
    assert replay[0]["type"] == "state" and replay[0]["run"]["id"] == run_a.pk
    assert [f["step"] for f in replay if f["type"] == "metric"] == [2, 3]
    assert [f["step"] for f in live] == [4, 5, 6, 7]
    assert [f["seq"] for f in live] == [5, 6, 7, 8]


def test_redone_steps_overwrite_their_points_and_the_replay_keeps_every_seq(run_a: Any) -> None:
    from webapp.metrics.selectors import run_metric_keys
    from webapp.metrics.series import metric_series_read
    from webapp.runs.stream.events import events_since, flatten

    first = events_record(run_id=run_a.pk, events=[metric(1), metric(2)])
    # A resume redoes step 2 (twice in one batch here): the series keeps the newest point.
    again = events_record(run_id=run_a.pk, events=[{**metric(2), "values": {"train/loss": 9.0}}, metric(2)])
    stored = metric_series_read(series=[(run_a.pk, key) for key in run_metric_keys(run=run_a)])
    assert sum(len(points) for points in stored.values()) == 2
    # The replay is what a live watcher was sent: every seq once, none missing, the old values too.
    replay = flatten(events_since(run_id=run_a.pk))
    assert [e["seq"] for e in replay] == list(range(1, 6))
    metrics = [e for e in replay if e["type"] == "metric"]
    assert metrics == [{k: v for k, v in e.items() if k != "progress"} for e in first + again]
    assert [(e["step"], e["values"]["train/loss"]) for e in metrics] == [(1, 1.0), (2, 0.5), (2, 9.0), (2, 0.5)]


def test_a_seq_whose_metrics_are_redone_one_key_at_a_time_replays_whole(run_a: Any) -> None:
    from webapp.runs.stream.events import events_since, flatten

    (both,) = events_record(run_id=run_a.pk, events=[
        {"type": "metric", "step": 3, "epoch": 1.0, "values": {"train/loss": 0.5, "val/loss": 0.7}}])
    events_record(run_id=run_a.pk, events=[{"type": "metric", "step": 3, "epoch": 1.0, "values": {"train/loss": 0.4}}])
    events_record(run_id=run_a.pk, events=[{"type": "metric", "step": 3, "epoch": 1.0, "values": {"val/loss": 0.6}}])
    replay = flatten(events_since(run_id=run_a.pk))
    assert [e["seq"] for e in replay] == list(range(1, 5))
    assert replay[1] == both
    assert [e["values"] for e in replay[2:]] == [{"train/loss": 0.4}, {"val/loss": 0.6}]
