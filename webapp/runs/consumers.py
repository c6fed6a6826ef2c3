"""The run stream: ws://…/ws/runs/<id>/?since=<seq>.

Protocol (server to client, JSON frames):
    {"type": "state", "run": {...as GET /api/runs/<id>/...}, "seq": N}   first, once
    then every stored event with seq > since, in seq order, then live ones:
    {"type": "metric" | "status" | "log" | "checkpoint" | "explanation", "run": id, "seq": s, ...}
    {"type": "replayed", "seq": N}   after the stored events (the client is caught up)

Order of work on connect: authenticate (4401), check the user may see the run (4404), join
the group `run.<id>`, send the state and replay from the database, and only then handle live
messages (Channels dispatches them after `connect` returns; the layer buffers them meanwhile).
A live event is forwarded only when its seq is the next one; a gap (a dropped or reordered
hint) is filled from the database, so the client gets every event once, in order. While a run
is active and the layer is quiet, the consumer also looks at the database every few seconds, so
a restarted Redis costs latency, never events.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from .events import events_since, run_group
from .models import Run

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
POLL_SECONDS = 3.0


@database_sync_to_async
def _visible_run_id(user: Any, run_id: int) -> int | None:
    from .selectors import run_for_user

    run = run_for_user(user=user, run_id=run_id)
    return run.pk if run is not None else None


@database_sync_to_async
def _state(run_id: int) -> dict[str, Any]:
    from .api import RunSerializer

    run = Run.objects.select_related("graph_revision__graph", "dataset", "created_by").get(pk=run_id)
    return {"type": "state", "run": RunSerializer(run).data, "seq": run.event_seq}


@database_sync_to_async
def _stored_after(run_id: int, since: int) -> list[dict[str, Any]]:
    return [event for batch in events_since(run_id=run_id, since=since) for event in batch]


@database_sync_to_async
def _run_active(run_id: int) -> bool:
    status = Run.objects.filter(pk=run_id).values_list("status", flat=True).first()
    return status in ("queued", "running", "interrupted")


class RunConsumer(AsyncJsonWebsocketConsumer):
    """Streams one run's events to a user allowed to see it."""

    run_id: int
    last_seq: int

    async def connect(self) -> None:
        """Check access, join the group, send state + stored events after `since`."""
        await self.accept()
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        if await _visible_run_id(user, run_id) is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.run_id = run_id
        self.group = run_group(run_id)
        try:
            since = max(0, int(parse_qs(self.scope.get("query_string", b"").decode()).get("since", ["0"])[0]))
        except ValueError:
            since = 0
        self.last_seq = since
        # The poller and the live handler both send; one at a time, so nothing goes out twice.
        self.sending = asyncio.Lock()
        self.joined = await self._join()
        self.quiet_since = asyncio.get_running_loop().time()
        await self.send_json(await _state(run_id))
        await self._catch_up()
        await self.send_json({"type": "replayed", "seq": self.last_seq})
        self.poller = asyncio.create_task(self._poll())

    async def disconnect(self, code: int) -> None:
        """Leave the group and stop polling."""
        poller = getattr(self, "poller", None)
        if poller is not None:
            poller.cancel()
        if getattr(self, "joined", False):
            try:
                await self.channel_layer.group_discard(self.group, self.channel_name)
            except Exception as exc:
                logger.info("run stream: could not leave %s: %s", self.group, exc)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """The stream is one-way; client messages are ignored."""

    async def run_events(self, message: dict[str, Any]) -> None:
        """Live events from the recorder or a service: forward the next ones, fill gaps from the DB."""
        self.quiet_since = asyncio.get_running_loop().time()
        async with self.sending:
            for event in message.get("events", []):
                seq = int(event.get("seq", 0))
                if seq <= self.last_seq:
                    continue  # already sent (replayed, or an earlier message carried it)
                if seq != self.last_seq + 1:
                    await self._catch_up()
                    continue
                await self.send_json(event)
                self.last_seq = seq

    async def _catch_up(self) -> None:
        for event in await _stored_after(self.run_id, self.last_seq):
            if event["seq"] > self.last_seq:
                await self.send_json(event)
                self.last_seq = event["seq"]

    async def _join(self) -> bool:
        try:
            await self.channel_layer.group_add(self.group, self.channel_name)
        except Exception as exc:  # no Redis: the poller alone keeps the stream going
            logger.info("run stream: could not join %s: %s", self.group, exc)
            return False
        return True

    async def _poll(self) -> None:
        """While the run is active and the layer has been quiet, read the database now and then."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                await asyncio.sleep(POLL_SECONDS)
                if loop.time() - self.quiet_since < POLL_SECONDS:
                    continue
                if not await _run_active(self.run_id):
                    # Explanations may still come; they are rare, so poll slowly.
                    await asyncio.sleep(POLL_SECONDS * 4)
                # A restarted Redis forgot the group: join again (cheap, idempotent).
                self.joined = await self._join()
                async with self.sending:
                    await self._catch_up()
        except asyncio.CancelledError:
            pass
        except Exception:
            logger.exception("run stream %s: poller failed", self.run_id)
