"""The batched stream (`?batch=1`, what the browser asks for): one frame per live message, gaps filled.

A client that asks for batches gets the replay and every live group message as `batch` frames
carrying consecutive events; it still gets every event once, in seq order, and a hint that
repeats what it has or skips what was lost changes nothing. Clients at the same seq are sent the
same text (serialised once per process).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from webapp.runs.stream import consumers
from webapp.runs.stream.events import GROUP_MESSAGE_TYPE, events_record, run_group
from webapp.runs.stream.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _memory_layer(runs_env: Any) -> Any:
    """In-memory channel layer; the consumer's database connections closed afterwards."""
    yield
    from channels.db import database_sync_to_async
    from django.db import connections

    asyncio.run(database_sync_to_async(connections.close_all)())


@pytest.fixture
def run_a(iris_run: Any) -> Any:
    return iris_run()


def communicator(run_id: int, user: Any, since: int, batch: bool = True) -> WebsocketCommunicator:
    query = f"?since={since}" + ("&batch=1" if batch else "")
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{run_id}/{query}")
    comm.scope["user"] = user
    return comm


def metric(step: int) -> dict[str, Any]:
    return {"type": "metric", "step": step, "epoch": step / 10, "values": {"train/loss": 1.0 / step}}


def seqs(frame: dict[str, Any]) -> list[int]:
    return [e["seq"] for e in frame["events"]]


def test_batch_clients_get_one_frame_per_message_every_event_once(run_a: Any, viewer_a: Any) -> None:
    stored = events_record(run_id=run_a.pk, events=[metric(1), metric(2), metric(3)])  # seq 2..4

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        comm = communicator(run_a.pk, viewer_a, since=2)
        await comm.connect()
        replay = [await comm.receive_json_from(timeout=5)]
        while replay[-1]["type"] != "replayed":
            replay.append(await comm.receive_json_from(timeout=5))
        layer = get_channel_layer()
        # One message repeating the replay and carrying three new events: one frame with the three.
        new = await asyncio.to_thread(events_record, run_id=run_a.pk, events=[metric(4), metric(5), metric(6)])
        await layer.group_send(run_group(run_a.pk), {"type": GROUP_MESSAGE_TYPE, "events": stored + new})
        live = [await comm.receive_json_from(timeout=5)]
        # Two events whose hint was lost, then a hint for a third: the gap comes from the database.
        lost = await asyncio.to_thread(events_record, run_id=run_a.pk, events=[metric(7), metric(8), metric(9)])
        await layer.group_send(run_group(run_a.pk), {"type": GROUP_MESSAGE_TYPE, "events": lost[-1:]})
        live.append(await comm.receive_json_from(timeout=5))
        await layer.group_send(run_group(run_a.pk), {"type": GROUP_MESSAGE_TYPE, "events": lost[:2]})
        assert await comm.receive_nothing(timeout=0.3)
        await comm.disconnect()
        return replay, live

    replay, live = asyncio.run(scenario())
    assert [f["type"] for f in replay] == ["state", "batch", "replayed"]
    assert seqs(replay[1]) == [3, 4] and replay[1]["seq"] == 4
    assert [f["type"] for f in live] == ["batch", "batch"]
    assert seqs(live[0]) == [5, 6, 7] and [e["step"] for e in live[0]["events"]] == [4, 5, 6]
    assert seqs(live[1]) == [8, 9, 10] and live[1]["seq"] == 10


def test_clients_at_the_same_seq_are_sent_the_same_text(run_a: Any, viewer_a: Any, user_a: Any) -> None:
    async def scenario() -> list[str]:
        comms = [communicator(run_a.pk, viewer_a, since=0), communicator(run_a.pk, user_a, since=0)]
        for comm in comms:
            await comm.connect()
            while (await comm.receive_json_from(timeout=5))["type"] != "replayed":
                pass
        new = await asyncio.to_thread(events_record, run_id=run_a.pk, events=[metric(1), metric(2)])
        await get_channel_layer().group_send(run_group(run_a.pk), {"type": GROUP_MESSAGE_TYPE, "events": new})
        texts = [(await comm.receive_output(timeout=5))["text"] for comm in comms]
        for comm in comms:
            await comm.disconnect()
        return texts

    first, second = asyncio.run(scenario())
    assert first is second  # one serialisation for both clients
    assert [e["step"] for e in json.loads(first)["events"]] == [1, 2]
    key = (True, run_a.pk, 2, 3)
    assert consumers._FRAME_TEXTS[key][1] is first


def test_clients_without_batch_still_get_one_frame_per_event(run_a: Any, viewer_a: Any) -> None:
    async def scenario() -> list[dict[str, Any]]:
        comm = communicator(run_a.pk, viewer_a, since=0, batch=False)
        await comm.connect()
        while (await comm.receive_json_from(timeout=5))["type"] != "replayed":
            pass
        new = await asyncio.to_thread(events_record, run_id=run_a.pk, events=[metric(1), metric(2)])
        await get_channel_layer().group_send(run_group(run_a.pk), {"type": GROUP_MESSAGE_TYPE, "events": new})
        frames = [await comm.receive_json_from(timeout=5) for _ in new]
        await comm.disconnect()
        return frames

    frames = asyncio.run(scenario())
    assert [(f["type"], f["step"]) for f in frames] == [("metric", 1), ("metric", 2)]
