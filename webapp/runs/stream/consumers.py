"""The run stream: ws://…/ws/runs/<id>/?since=<seq>.

Protocol (server to client, JSON frames):
    {"type": "state", "run": {...as GET /api/runs/<id>/...}, "seq": N}   first, once
    then every stored event with seq > since, in seq order, then live ones:
    {"type": "metric" | "status" | "log" | "checkpoint" | "explanation" | "export", "run": id, "seq": s, ...}
    {"type": "replayed", "seq": N}   after the stored events (the client is caught up)
With `?batch=1` (the browser app asks for it) consecutive events travel together instead:
    {"type": "batch", "events": [event, ...], "seq": last}   one frame per live group message
    (and per replayed chunk), so 500 watchers cost one frame per message each, not one per event;
the text of a live frame is serialised once per process for every client at the same seq.
Every frame is declared in webapp/runs/stream/event_types.py (StreamFrame); `send_json` checks it there
when NETLOOM_CHECK_EVENTS is on.

Order of work on connect: authenticate (4401), check the user may see the run (4404), join
the group `run.<id>`, send the state and replay from the database, and only then handle live
messages (Channels dispatches them after `connect` returns; the layer buffers them meanwhile).
A live event is forwarded only when its seq is the next one; a gap (a dropped or reordered
hint) is filled from the database, so the client gets every event once, in order. While a run
is active and the layer is quiet, the consumer also looks at the database every few seconds, so
a restarted Redis costs latency, never events; while the channel layer is unavailable the
stream stays open and is fed from the database alone.

Access is checked again while the stream is open: on an `access.changed` message to the
user's group `user.<id>` (a token revoked, a membership removed) and every
ACCESS_RECHECK_SECONDS; a revoked token closes the stream with 4401, a lost team with 4404.
The checks of all the process's streams are batched (webapp/runs/stream/stream_access.py): the periodic
ones fall due together, on the same ACCESS_RECHECK_SECONDS grid of the loop's clock, so a period
costs a few batches of three queries, not three queries per stream.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from webapp.accounts.events import user_group

from ..models import Run
from .event_types import frames_check
from .events import GROUP_MESSAGE_TYPE, events_since, run_group
from .stream_access import CLOSE_NOT_FOUND, CLOSE_UNAUTHENTICATED, stream_access_checker

logger = logging.getLogger(__name__)

POLL_SECONDS = 3.0
# Without the `access.changed` hint (Redis down), a revoked token's stream closes within this.
ACCESS_RECHECK_SECONDS = 15.0
LAYER_RETRY_MAX_SECONDS = 5.0
# Live frames already serialised in this process, by (batched, run, first seq, last seq): every
# client at the same seq sends the same text (the message is shared by the run's group).
# Each entry keeps the events it was made from: a hit must carry equal events (a comparison, much
# cheaper than serialising), so a run id reused by a test database never gets another's text.
_FRAME_TEXTS: OrderedDict[tuple[bool, int, int, int], tuple[list[dict[str, Any]], str]] = OrderedDict()
_FRAME_TEXTS_MAX = 512
# Replayed events per batch frame (a long run's replay is many frames of this size, not one).
CATCH_UP_BATCH = 500


def live_frame_text(*, batched: bool, run_id: int, events: list[dict[str, Any]]) -> str:
    """The JSON text of the frame that carries these live events (one event, or a batch of them)."""
    key = (batched, run_id, int(events[0]["seq"]), int(events[-1]["seq"]))
    cached = _FRAME_TEXTS.get(key)
    if cached is not None and cached[0] == events:
        return cached[1]
    frame = _frame(batched, events)
    frames_check([frame], where="consumer.send_json")
    text = json.dumps(frame)
    _FRAME_TEXTS[key] = (events, text)
    if len(_FRAME_TEXTS) > _FRAME_TEXTS_MAX:
        _FRAME_TEXTS.popitem(last=False)
    return text


def _frame(batched: bool, events: list[dict[str, Any]]) -> dict[str, Any]:
    if batched:
        return {"type": "batch", "events": events, "seq": int(events[-1]["seq"])}
    (event,) = events
    return event


@database_sync_to_async
def _visible_run_id(user: Any, run_id: int) -> int | None:
    from ..selectors import run_for_user

    run = run_for_user(user=user, run_id=run_id)
    return run.pk if run is not None else None


@database_sync_to_async
def _state(run_id: int) -> dict[str, Any]:
    from ..api.runs import RunSerializer

    run = Run.objects.select_related("graph_revision__graph", "dataset", "created_by").get(pk=run_id)
    return {"type": "state", "run": RunSerializer(run).data, "seq": run.event_seq}


@database_sync_to_async
def _stored_after(run_id: int, since: int) -> list[dict[str, Any]]:
    return [event for batch in events_since(run_id=run_id, since=since) for event in batch]


@database_sync_to_async
def _run_active(run_id: int) -> bool:
    status = Run.objects.filter(pk=run_id).values_list("status", flat=True).first()
    return status in ("queued", "running", "interrupted")


def _recheck_due(checked: float, now: float) -> bool:
    """Whether a boundary of the ACCESS_RECHECK_SECONDS grid passed since the stream's last check.

    A grid shared by every stream of the loop, rather than 15 s after each stream's own last
    check: the streams' periodic checks then arrive within one poll interval of each other and
    share batches. A stream is still checked at least every ACCESS_RECHECK_SECONDS + POLL_SECONDS.
    """
    return now // ACCESS_RECHECK_SECONDS > checked // ACCESS_RECHECK_SECONDS


class RunConsumer(AsyncJsonWebsocketConsumer):
    """Streams one run's events to a user allowed to see it."""

    run_id: int
    last_seq: int
    _layer_receive_raw: Any = None

    # Channels' AsyncConsumer sets `channel_receive` (the channel layer's receive for this
    # consumer) and awaits it beside the socket; when Redis is down that receive raises, and an
    # uncaught error closes the socket with 1011. The stream must go on from the database, so the
    # consumer hands Channels a receive that waits out an unavailable layer instead.
    @property
    def channel_receive(self) -> Any:
        return self._layer_receive

    @channel_receive.setter
    def channel_receive(self, raw: Any) -> None:
        self._layer_receive_raw = raw

    async def _layer_receive(self) -> dict[str, Any]:
        delay = 0.5
        while True:
            try:
                return await self._layer_receive_raw()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if getattr(self, "joined", False):
                    logger.info("run stream: channel layer unavailable (%s); reading the database", exc)
                self.joined = False  # the poller joins again once the layer answers
                await asyncio.sleep(delay)
                delay = min(delay * 2, LAYER_RETRY_MAX_SECONDS)

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
        query = parse_qs(self.scope.get("query_string", b"").decode())
        try:
            since = max(0, int(query.get("since", ["0"])[0]))
        except ValueError:
            since = 0
        self.batched = query.get("batch", ["0"])[0] in ("1", "true")
        self.last_seq = since
        # The poller and the live handler both send; one at a time, so nothing goes out twice.
        self.sending = asyncio.Lock()
        self.joined = await self._join()
        self.access_checked = self.quiet_since = asyncio.get_running_loop().time()
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
            for group in (self.group, user_group(self.scope["user"].pk)):
                try:
                    await self.channel_layer.group_discard(group, self.channel_name)
                except Exception as exc:
                    logger.info("run stream: could not leave %s: %s", group, exc)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Channels' dispatch, minus its thread hop per live message.

        Channels closes stale database connections (on a worker thread) before every handler; for
        `run.events` that is one thread hop per message per client, a quarter of a busy server's
        time with 500 watchers. That handler reaches the database only through
        database_sync_to_async (gap fills), which closes stale connections itself.
        """
        if message.get("type") == GROUP_MESSAGE_TYPE:
            await self.run_events(message)
            return
        await super().dispatch(message)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """The stream is one-way; client messages are ignored."""

    async def send_json(self, content: Any, close: bool = False) -> None:
        """Every frame goes out here: checked against its model when NETLOOM_CHECK_EVENTS is on."""
        frames_check([content], where="consumer.send_json")
        await super().send_json(content, close=close)

    async def run_events(self, message: dict[str, Any]) -> None:
        """Live events from the recorder or a service: forward the next ones, fill gaps from the DB."""
        self.quiet_since = asyncio.get_running_loop().time()
        async with self.sending:
            run_of_next: list[dict[str, Any]] = []  # consecutive new events, sent as one frame
            for event in message.get("events", []):
                seq = int(event.get("seq", 0))
                if seq <= self.last_seq:
                    continue  # already sent (replayed, or an earlier message carried it)
                if seq != self.last_seq + 1:
                    await self._send_live(run_of_next)
                    run_of_next = []
                    await self._catch_up()
                    continue
                if self.batched:
                    run_of_next.append(event)
                else:
                    await self._send_live([event])
                self.last_seq = seq
            await self._send_live(run_of_next)

    async def _send_live(self, events: list[dict[str, Any]]) -> None:
        if events:
            await self.send(text_data=live_frame_text(batched=self.batched, run_id=self.run_id, events=events))

    async def access_changed(self, message: dict[str, Any]) -> None:
        """A token of this user was revoked or a membership removed: check again at once."""
        await self._check_access()

    async def _check_access(self) -> bool:
        """Close the stream when its token, user or team no longer allow it; True if still open."""
        self.access_checked = asyncio.get_running_loop().time()
        checker = stream_access_checker()
        code = await checker.check(self.scope.get("auth_token_id"), self.scope.get("user"), self.run_id)
        if code is None:
            return True
        poller = getattr(self, "poller", None)
        if poller is not None and poller is not asyncio.current_task():
            poller.cancel()
        await self.close(code=code)
        return False

    async def _catch_up(self) -> None:
        events = [e for e in await _stored_after(self.run_id, self.last_seq) if e["seq"] > self.last_seq]
        if self.batched:
            for start in range(0, len(events), CATCH_UP_BATCH):
                chunk = events[start : start + CATCH_UP_BATCH]
                await self.send_json(_frame(True, chunk))
                self.last_seq = chunk[-1]["seq"]
            return
        for event in events:
            await self.send_json(event)
            self.last_seq = event["seq"]

    async def _join(self) -> bool:
        try:
            await self.channel_layer.group_add(self.group, self.channel_name)
            await self.channel_layer.group_add(user_group(self.scope["user"].pk), self.channel_name)
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
                if _recheck_due(self.access_checked, loop.time()):
                    if not await self._check_access():
                        return
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
