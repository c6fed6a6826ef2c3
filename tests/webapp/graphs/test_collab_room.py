"""The graph room in process (Channels' communicator, the test channel layer): join, sync, refuse."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from pycrdt import Map

from tests.collab_support.yclient import YClient
from webapp.graphs.collab.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _close_consumer_connections() -> Any:
    yield
    from channels.db import database_sync_to_async
    from django.db import connections

    asyncio.run(database_sync_to_async(connections.close_all)())


class Peer:
    def __init__(self, graph_id: int, user: Any, slash: bool = True) -> None:
        path = f"/ws/graphs/{graph_id}/collab" + ("/" if slash else "")
        self.comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
        self.comm.scope["user"] = user
        self.client = YClient(lambda data: self.comm.send_to(bytes_data=data))

    async def open(self) -> None:
        connected, _ = await self.comm.connect()
        assert connected
        await self.client.start()

    async def pump(self, until: Any, timeout: float = 5) -> None:
        async def run() -> None:
            while not until():
                message = await self.comm.receive_output(timeout=timeout)
                if message["type"] == "websocket.close":
                    raise AssertionError(f"closed {message['code']}")
                await self.client.handle(message["bytes"])

        await asyncio.wait_for(run(), timeout)


def test_foreign_and_anonymous_users_are_closed(graph_a: Any, user_b: Any) -> None:
    async def close_code(user: Any) -> int:
        comm = WebsocketCommunicator(
            URLRouter(websocket_urlpatterns), f"/ws/graphs/{graph_a.pk}/collab"
        )
        comm.scope["user"] = user
        await comm.connect()
        message = await comm.receive_output(timeout=5)
        assert message["type"] == "websocket.close"
        return message["code"]

    assert asyncio.run(close_code(AnonymousUser())) == 4401
    assert asyncio.run(close_code(user_b)) == 4403


def test_two_editors_converge_and_a_viewer_is_refused(
    graph_a: Any, user_a: Any, viewer_a: Any
) -> None:
    async def scenario() -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        a, b, v = (
            Peer(graph_a.pk, user_a),
            Peer(graph_a.pk, user_a, slash=False),
            Peer(graph_a.pk, viewer_a),
        )
        for peer in (a, b, v):
            await peer.open()
            await peer.pump(lambda p=peer: "fc1" in p.client.roots["nodes"])
        nodes = a.client.roots["nodes"]
        with a.client.doc.transaction():
            nodes["relu_1_a"] = Map({"op": "ReLU", "params": Map(), "x": 1.0, "y": 2.0})
        await a.client.flush()
        await b.pump(lambda: "relu_1_a" in b.client.roots["nodes"])
        with v.client.doc.transaction():
            v.client.roots["nodes"]["evil"] = Map({"op": "ReLU", "params": Map()})
        await v.client.flush()
        await v.pump(lambda: v.client.denied)
        for peer in (a, b, v):
            await peer.comm.disconnect()
        return a.client.json(), b.client.json(), v.client.denied

    doc_a, doc_b, denied = asyncio.run(scenario())
    assert doc_a == doc_b
    assert "relu_1_a" in doc_b["nodes"] and "evil" not in doc_b["nodes"]
    assert denied == ["read-only"]


def test_bad_and_oversized_frames_close_only_their_socket(graph_a: Any, user_a: Any) -> None:
    from webapp.graphs.collab.consumer import MAX_MESSAGE_BYTES
    from webapp.graphs.models import GraphCollabUpdate

    async def close_code(frame: bytes) -> int:
        peer = Peer(graph_a.pk, user_a)
        await peer.open()
        await peer.pump(lambda: "fc1" in peer.client.roots["nodes"])
        await peer.comm.send_to(bytes_data=frame)
        while True:
            message = await peer.comm.receive_output(timeout=5)
            if message["type"] == "websocket.close":
                return message["code"]

    async def scenario() -> tuple[list[int], dict[str, Any]]:
        good = Peer(graph_a.pk, user_a)
        await good.open()
        await good.pump(lambda: "fc1" in good.client.roots["nodes"])
        codes = [
            await close_code(b"\x00\x02\x05\x01\x02\x03\x04\xff"),  # an update that is not one
            await close_code(b"\x00\x02\xff\xff\xff\xff"),  # a length past the end
            await close_code(b"\x00\x02" + b"\x01" * (MAX_MESSAGE_BYTES + 1)),
        ]
        # The room goes on: an edit from the good socket still reaches a new one.
        with good.client.doc.transaction():
            good.client.roots["nodes"]["fc1"]["params"]["out_features"] = 7
        await good.client.flush()
        late = Peer(graph_a.pk, user_a)
        await late.open()
        await late.pump(
            lambda: (
                late.client.roots["nodes"].get("fc1") is not None
                and late.client.roots["nodes"]["fc1"]["params"].get("out_features") == 7
            )
        )
        for peer in (good, late):
            await peer.comm.disconnect()
        return codes, late.client.spec()

    codes, spec = asyncio.run(scenario())
    assert codes == [1003, 1003, 1009]
    assert spec["nodes"][0]["params"] == {"out_features": 7}
    assert GraphCollabUpdate.objects.filter(doc__graph=graph_a).count() == 1
