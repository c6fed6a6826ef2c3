"""A y-websocket-like client made of pycrdt parts, for the room's tests and its bench.

It speaks what a browser's WebsocketProvider speaks: sync step 1 on open, step 2 in answer
to the server's step 1, every local transaction sent as an update, awareness as its own
message. `send` is whatever writes one binary frame (a Channels communicator, a websocket).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from pycrdt import (
    Awareness,
    Decoder,
    Doc,
    Map,
    YMessageType,
    YSyncMessageType,
    create_awareness_message,
    create_sync_message,
    create_update_message,
    handle_sync_message,
)

from webapp.graphs.collab.doc import ROOTS, doc_json, ydoc_to_spec


class YClient:
    """One editor: a pycrdt Doc kept in sync over `send`; feed it frames with `handle`."""

    def __init__(self, send: Callable[[bytes], Awaitable[None]], name: str = "") -> None:
        self.name = name
        self.doc = Doc()
        self.roots = {root: self.doc.get(root, type=Map) for root in ROOTS}
        self.awareness = Awareness(self.doc)
        self._send = send
        self.denied: list[str] = []
        self.synced = asyncio.Event()
        self.changed = asyncio.Event()
        self._remote = False
        self._outbox: list[bytes] = []
        self.doc.observe(self._on_transaction)

    def _on_transaction(self, event: Any) -> None:
        self.changed.set()
        if not self._remote:
            self._outbox.append(event.update)

    async def flush(self) -> None:
        """Send the updates of the local transactions made since the last flush."""
        outbox, self._outbox = self._outbox, []
        for update in outbox:
            await self._send(create_update_message(update))

    async def start(self) -> None:
        await self._send(create_sync_message(self.doc))

    async def handle(self, data: bytes) -> None:
        """One frame from the server."""
        if data[0] == YMessageType.SYNC:
            self._remote = True
            try:
                reply = handle_sync_message(data[1:], self.doc)
            finally:
                self._remote = False
            if reply is not None:
                await self._send(reply)
            if data[1] == YSyncMessageType.SYNC_STEP2:
                self.synced.set()
        elif data[0] == YMessageType.AWARENESS:
            decoder = Decoder(data[1:])
            self.awareness.apply_awareness_update(decoder.read_message(), "remote")
        elif data[0] == 2:
            decoder = Decoder(data[1:])
            decoder.read_var_uint()
            self.denied.append(decoder.read_var_string())

    async def set_presence(self, state: dict[str, Any]) -> None:
        self.awareness.set_local_state(state)
        update = self.awareness.encode_awareness_update([self.doc.client_id])
        await self._send(create_awareness_message(update))

    def spec(self) -> dict[str, Any]:
        return ydoc_to_spec(self.doc)

    def json(self) -> dict[str, Any]:
        return doc_json(self.doc)
