"""A YClient over a real WebSocket (the `websockets` client), for the stack tests and the bench."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pycrdt import Map
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from .yclient import YClient


def base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if number == 0:
            return out


class Editor:
    """One person in a graph's room: `async with Editor(url, token) as e: ...`."""

    def __init__(self, url: str, token: str | None, name: str = "") -> None:
        self.url = url
        self.token = token
        self.name = name
        self.ws: ClientConnection | None = None
        self.client = YClient(self._send, name)
        self.closed_code: int | None = None
        self.closed = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self.on_frame: Any = None  # called after each frame is handled (the bench's clock)

    @property
    def tag(self) -> str:
        """This client's id tag for new node ids (`<base>_<n>_<tag>`)."""
        return base36(self.client.doc.client_id)

    async def _send(self, data: bytes) -> None:
        assert self.ws is not None
        await self.ws.send(data)

    async def __aenter__(self) -> Editor:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        self.ws = await connect(
            self.url, additional_headers=headers, max_size=None, open_timeout=60, ping_interval=None
        )
        self._reader = asyncio.create_task(self._read())
        await self.client.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self.ws is not None:
            await self.ws.close()

    async def _read(self) -> None:
        assert self.ws is not None
        try:
            async for frame in self.ws:
                if isinstance(frame, bytes):
                    await self.client.handle(frame)
                    if self.on_frame is not None:
                        self.on_frame(self)
        except ConnectionClosed:
            pass
        finally:
            if self.ws.close_code is not None:
                self.closed_code = self.ws.close_code
            self.closed.set()

    async def until(self, condition: Any, timeout: float = 15.0) -> None:
        """Wait until `condition()` holds (checked after each change), or fail after `timeout`."""
        deadline = time.monotonic() + timeout
        while not condition():
            if self.closed.is_set() and not condition():
                raise AssertionError(f"{self.name}: closed ({self.closed_code}) while waiting")
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self.name}: condition not met in {timeout}s")
            self.client.changed.clear()
            try:
                await asyncio.wait_for(self.client.changed.wait(), min(left, 0.2))
            except TimeoutError:
                pass

    async def synced(self, timeout: float = 15.0) -> None:
        await asyncio.wait_for(self.client.synced.wait(), timeout)

    def new_id(self, base: str) -> str:
        nodes = self.client.roots["nodes"]
        n = 1
        while f"{base}_{n}_{self.tag}" in nodes:
            n += 1
        return f"{base}_{n}_{self.tag}"

    async def add_node(
        self,
        op: str,
        params: dict[str, Any] | None = None,
        *,
        source: str | None = None,
        x: float = 0,
        y: float = 0,
    ) -> str:
        """Add an op node (and an edge from `source` into its slot 0), as one transaction, and send it."""
        node_id = self.new_id(op.lower())
        doc = self.client.doc
        with doc.transaction():
            self.client.roots["nodes"][node_id] = Map(
                {"op": op, "params": Map(params or {}), "x": x, "y": y}
            )
            if source is not None:
                key = f"{source}->{node_id}:0"
                self.client.roots["edges"][key] = Map(
                    {"source": source, "target": node_id, "slot": 0}
                )
        await self.client.flush()
        return node_id

    async def delete_node(self, node_id: str, *, send: bool = True) -> None:
        doc = self.client.doc
        edges = self.client.roots["edges"]
        with doc.transaction():
            del self.client.roots["nodes"][node_id]
            for key in [
                k
                for k, e in edges.items()
                if isinstance(e, Map)
                and node_id in (e.get("target"), str(e.get("source")).split(":")[0])
            ]:
                del edges[key]
        if send:
            await self.client.flush()

    async def set_param(self, node_id: str, name: str, value: Any, *, send: bool = True) -> None:
        self.client.roots["nodes"][node_id]["params"][name] = value
        if send:
            await self.client.flush()
