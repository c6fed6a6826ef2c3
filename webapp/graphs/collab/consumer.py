"""The room of a graph: ws://…/ws/graphs/<id>/collab/ (y-websocket's client appends no slash).

What travels are the y-protocols messages, binary frames, encoded and decoded by pycrdt:

    [0, 0, state vector]     sync step 1: "what I have"; answered with step 2
    [0, 1, update]           sync step 2: what the other side lacks
    [0, 2, update]           an update (an edit)
    [1, awareness update]    presence: cursor, selection, what is being edited or dragged
    [2, 0, "read-only"]      auth, permission denied (server to client): an update was refused
    [3]                      query awareness (client to server): answered with everyone's

On join: authenticate (4401), check team membership (4403), join the room's group, load the
document (the process's room: snapshot + log from the database, seeded once from the latest
revision), send sync step 1 and the awareness of everyone present. A client's step 1 is
answered with step 2; its step 2 and updates are, for an editor, checked (they must decode),
appended to the database log, applied to the room and broadcast to the room's group (every
process); for a viewer or a read-scope token they are refused with the auth message and
neither applied, stored nor broadcast. Awareness from anyone is applied and broadcast; when a
socket closes, the presence it carried is removed for everyone.

Limits: a frame over MAX_MESSAGE_BYTES closes the socket (1009), as does an update that would
take the room's document past MAX_DOC_BYTES; a frame that does not decode closes it with 1003.
Neither touches the room or anyone else's socket.

Access is checked again while the room is open, as run streams do: on `access.changed` to the
user's group and every ACCESS_RECHECK_SECONDS; a revoked token or disabled user closes with
4401, a lost membership with 4403, and a change to viewer makes the socket read-only.

The class is pycrdt-websocket's Django Channels consumer (YjsConsumer) with its receive made
per message type: the stock one broadcast every frame (each client's step 1 included) to the
whole group and kept a document per socket, with no authorisation or persistence.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from collections import OrderedDict
from typing import Any

from channels.db import database_sync_to_async
from pycrdt import (
    Awareness,
    Decoder,
    Doc,
    Encoder,
    YMessageType,
    YSyncMessageType,
    create_awareness_message,
    create_sync_message,
    create_update_message,
    handle_sync_message,
)
from pycrdt.websocket.django_channels_consumer import YjsConsumer

from webapp.accounts.events import user_group

from .selectors import CLOSE_FORBIDDEN, CLOSE_UNAUTHENTICATED, collab_access
from .services import apply_all, collab_update_append, collab_updates

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 1 << 20  # one frame; uvicorn (webapp/serve.py) refuses bigger ones first
MAX_DOC_BYTES = 32 << 20  # the room's document (snapshot + log, as stored)
ACCESS_RECHECK_SECONDS = 15.0
MESSAGE_AUTH = 2
MESSAGE_QUERY_AWARENESS = 3
PERMISSION_DENIED = 0
READ_ONLY = "read-only"
EMPTY_UPDATE = b"\x00\x00"
GROUP_MESSAGE_TYPE = "collab.message"
CLOSE_TOO_BIG = 1009
CLOSE_BAD_DATA = 1003
_SEEN_MAX = 4096


def room_group(graph_id: int) -> str:
    """The channel-layer group of a graph's room (its sockets in every server process)."""
    return f"graph.{graph_id}.collab"


def auth_denied_message(reason: str = READ_ONLY) -> bytes:
    """y-protocols' auth message: permission denied, with the reason y-websocket hands its handler."""
    encoder = Encoder()
    encoder.write_var_uint(MESSAGE_AUTH)
    encoder.write_var_uint(PERMISSION_DENIED)
    encoder.write_var_string(reason)
    return encoder.to_bytes()


class BadMessage(ValueError):
    """A frame that is not a y-protocols message this room understands."""


def _payload(data: bytes, start: int) -> bytes:
    """The length-prefixed payload at `start` (y-protocols' writeVarUint8Array)."""
    decoder = Decoder(data[start:])
    try:
        length = decoder.read_var_uint()
    except (IndexError, RuntimeError):
        raise BadMessage("no payload length") from None
    payload = data[start:][decoder.i0 : decoder.i0 + length]
    if len(payload) != length:
        raise BadMessage("truncated payload")
    return payload


class Room:
    """One graph's document and presence in this server process, shared by its sockets here.

    Every socket of the room receives every group message; the first to handle one applies it to
    the room (`seen`), the others only forward it to their clients.
    """

    def __init__(self, graph_id: int) -> None:
        self.graph_id = graph_id
        self.doc = Doc()
        self.awareness = Awareness(self.doc)
        self.awareness.remove_awareness_states(
            [self.doc.client_id], "server"
        )  # the server shows no one
        self.awareness.observe(self._on_awareness)
        self.members: set[GraphCollabConsumer] = set()
        self.loaded = False
        self.doc_id: int | None = None  # the GraphCollabDoc row
        self.log_count = 0  # log entries since the snapshot, as far as this process knows
        self.size = 0
        self.lock = asyncio.Lock()
        self.seen: OrderedDict[str, None] = OrderedDict()

    def first_sight(self, message_id: str) -> bool:
        """True once per group message id (then the room applies it)."""
        if message_id in self.seen:
            return False
        self.seen[message_id] = None
        if len(self.seen) > _SEEN_MAX:
            self.seen.popitem(last=False)
        return True

    def _on_awareness(self, topic: str, event: tuple[dict[str, list[int]], Any]) -> None:
        changes, origin = event
        if topic != "update" or not isinstance(origin, GraphCollabConsumer):
            return
        origin.presence.update(changes["added"] + changes["updated"])
        origin.presence.difference_update(changes["removed"])

    def awareness_message(self, client_ids: list[int] | None = None) -> bytes | None:
        """The awareness of `client_ids` (everyone present when None) as one message, or None."""
        ids = list(self.awareness.states) if client_ids is None else client_ids
        if not ids:
            return None
        return create_awareness_message(self.awareness.encode_awareness_update(ids))


# The rooms of each event loop (Channels' tests and asyncio.run make new loops).
_ROOMS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, Room]] = (
    weakref.WeakKeyDictionary()
)


def _rooms() -> dict[int, Room]:
    loop = asyncio.get_running_loop()
    rooms = _ROOMS.get(loop)
    if rooms is None:
        rooms = _ROOMS[loop] = {}
    return rooms


@database_sync_to_async
def _access(user: Any, token_id: int | None, graph_id: int) -> tuple[int | None, bool]:
    return collab_access(user=user, token_id=token_id, graph_id=graph_id)


@database_sync_to_async
def _load(graph_id: int) -> tuple[int, list[bytes]]:
    row, updates = collab_updates(graph_id=graph_id)
    return row.pk, updates


@database_sync_to_async
def _append(room: Room, data: bytes, user_id: int | None) -> int:
    return collab_update_append(
        graph_id=room.graph_id,
        data=data,
        user_id=user_id,
        doc_id=room.doc_id,
        log_count=room.log_count,
    )


def _valid_update(update: bytes) -> bool:
    """Whether the bytes decode as a Yjs update (applied to a scratch document)."""
    try:
        Doc().apply_update(update)
    except BaseException as exc:  # pyo3's PanicException is a BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit, asyncio.CancelledError)):
            raise
        return False
    return True


class GraphCollabConsumer(YjsConsumer):
    """One socket in a graph's room (see the module docstring for the protocol)."""

    graph_id: int
    room: Room | None = None
    read_only = True
    joined = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.presence: set[int] = set()  # awareness client ids this socket announced
        self.rechecker: asyncio.Task[None] | None = None

    def make_room_name(self) -> str:
        return room_group(self.graph_id)

    async def make_ydoc(self) -> Doc:
        """The process's document of this graph, loaded from the database by its first socket."""
        rooms = _rooms()
        room = rooms.get(self.graph_id)
        if room is None:
            room = rooms[self.graph_id] = Room(self.graph_id)
        room.members.add(self)
        self.room = room
        async with room.lock:
            if not room.loaded:
                room.doc_id, updates = await _load(self.graph_id)
                room.size, room.log_count = sum(len(u) for u in updates), len(updates) - 1
                apply_all(updates, room.doc)
                room.loaded = True
        return room.doc

    async def connect(self) -> None:
        """Authenticate, check membership, join, send step 1 and the presence of everyone here."""
        await self.accept()
        self.graph_id = int(self.scope["url_route"]["kwargs"]["graph_id"])
        user = self.scope.get("user")
        code, self.read_only = await _access(user, self.scope.get("auth_token_id"), self.graph_id)
        if code is not None:
            await self.close(code=code)
            return
        self.room_name = self.make_room_name()
        # Join before reading the document: an update broadcast meanwhile is queued for this
        # socket, so nothing falls between the load and the live messages.
        await self.channel_layer.group_add(self.room_name, self.channel_name)
        await self.channel_layer.group_add(user_group(user.pk), self.channel_name)
        self.joined = True
        self.ydoc = await self.make_ydoc()
        await self.send(bytes_data=create_sync_message(self.ydoc))
        presence = self.room.awareness_message() if self.room else None
        if presence is not None:
            await self.send(bytes_data=presence)
        self.rechecker = asyncio.create_task(self._recheck())

    async def disconnect(self, code: int) -> None:
        """Leave the room; the presence this socket carried is removed for everyone."""
        if self.rechecker is not None:
            self.rechecker.cancel()
        room = self.room
        if room is not None:
            gone = [cid for cid in self.presence if cid in room.awareness.states]
            if gone:
                room.awareness.remove_awareness_states(gone, "gone")
                message = room.awareness_message(gone)
                if message is not None:
                    await self._broadcast(message, apply=False)
            room.members.discard(self)
            if not room.members and _rooms().get(self.graph_id) is room:
                del _rooms()[self.graph_id]  # the next joiner loads from the database
        if self.joined:
            for group in (self.room_name, user_group(self.scope["user"].pk)):
                try:
                    await self.channel_layer.group_discard(group, self.channel_name)
                except Exception as exc:
                    logger.info("collab room: could not leave %s: %s", group, exc)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """One client frame: sync step 1, step 2 / update, awareness or query awareness."""
        if bytes_data is None or self.room is None:
            return  # text frames are not part of the protocol
        if len(bytes_data) > MAX_MESSAGE_BYTES:
            await self.close(code=CLOSE_TOO_BIG)
            return
        try:
            await self._handle(bytes_data)
        except BadMessage as exc:
            logger.info("collab room %s: refused a frame (%s)", self.graph_id, exc)
            await self.close(code=CLOSE_BAD_DATA)

    async def _handle(self, data: bytes) -> None:
        room = self.room
        assert room is not None
        if not data:
            raise BadMessage("empty frame")
        kind = data[0]
        if kind == YMessageType.SYNC:
            if len(data) < 2:
                raise BadMessage("sync frame without a type")
            step = data[1]
            payload = _payload(data, 2)
            if step == YSyncMessageType.SYNC_STEP1:
                try:
                    reply = handle_sync_message(data[1:], room.doc)
                except Exception as exc:
                    raise BadMessage(f"state vector: {exc}") from None
                if reply is not None:
                    await self.send(bytes_data=reply)
                return
            if step not in (YSyncMessageType.SYNC_STEP2, YSyncMessageType.SYNC_UPDATE):
                raise BadMessage(f"sync type {step}")
            if payload == EMPTY_UPDATE:
                return  # nothing to apply (a fresh client's step 2)
            if self.read_only:
                await self.send(bytes_data=auth_denied_message())
                return
            if not _valid_update(payload):
                raise BadMessage("not a Yjs update")
            if room.size + len(payload) > MAX_DOC_BYTES:
                await self.close(code=CLOSE_TOO_BIG)
                return
            room.log_count = await _append(room, payload, self.scope["user"].pk)
            room.size += len(payload)
            room.doc.apply_update(payload)
            await self._broadcast(create_update_message(payload), apply=False)
        elif kind == YMessageType.AWARENESS:
            payload = _payload(data, 1)
            try:
                room.awareness.apply_awareness_update(payload, self)
            except Exception as exc:
                raise BadMessage(f"awareness: {exc}") from None
            await self._broadcast(data, apply=False)
        elif kind == MESSAGE_QUERY_AWARENESS:
            presence = room.awareness_message()
            if presence is not None:
                await self.send(bytes_data=presence)
        # Auth frames from a client, and unknown kinds, are ignored (y-websocket's server does so).

    async def _broadcast(self, message: bytes, *, apply: bool) -> None:
        """Send `message` to the room's other sockets, in every process.

        The sender's room has it already (`apply` False marks it seen here); rooms of other
        processes apply it from the group message.
        """
        message_id = uuid.uuid4().hex
        if not apply and self.room is not None:
            self.room.first_sight(message_id)
        try:
            await self.channel_layer.group_send(
                self.room_name,
                {
                    "type": GROUP_MESSAGE_TYPE,
                    "message": message,
                    "sender": self.channel_name,
                    "id": message_id,
                },
            )
        except Exception as exc:  # the edit is stored: a late joiner or a reconnect gets it
            logger.warning("collab room %s: could not broadcast: %s", self.graph_id, exc)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Channels' dispatch, minus its thread hop per room message (the handler uses no database)."""
        if message.get("type") == GROUP_MESSAGE_TYPE:
            await self.collab_message(message)
            return
        await super().dispatch(message)

    async def collab_message(self, message: dict[str, Any]) -> None:
        """A room message from any process: applied to this process's room once, sent to the client."""
        room = self.room
        if room is None:
            return
        data = bytes(message["message"])
        if room.first_sight(message["id"]):
            self._apply(room, data)
        if message.get("sender") != self.channel_name:
            await self.send(bytes_data=data)

    @staticmethod
    def _apply(room: Room, data: bytes) -> None:
        try:
            if data[0] == YMessageType.SYNC:
                room.doc.apply_update(_payload(data, 2))
                room.size += len(data)
                room.log_count += 1  # stored by the process that accepted it
            elif data[0] == YMessageType.AWARENESS:
                room.awareness.apply_awareness_update(_payload(data, 1), "remote")
        except Exception:
            logger.exception("collab room %s: could not apply a room message", room.graph_id)

    async def access_changed(self, message: dict[str, Any]) -> None:
        """A token of this user was revoked or a membership changed: check again at once."""
        await self._check_access()

    async def _check_access(self) -> bool:
        code, read_only = await _access(
            self.scope.get("user"), self.scope.get("auth_token_id"), self.graph_id
        )
        if code is not None:
            await self.close(code=code)
            return False
        self.read_only = read_only
        return True

    async def _recheck(self) -> None:
        try:
            while True:
                await asyncio.sleep(ACCESS_RECHECK_SECONDS)
                if not await self._check_access():
                    return
        except asyncio.CancelledError:
            pass
        except Exception:
            logger.exception("collab room %s: access re-check failed", self.graph_id)


__all__ = [
    "CLOSE_FORBIDDEN",
    "CLOSE_UNAUTHENTICATED",
    "GraphCollabConsumer",
    "auth_denied_message",
    "room_group",
]
