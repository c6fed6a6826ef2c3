"""The channel layer of the service: channels_redis's pub/sub layer, able to start without Redis.

channels_redis's RedisPubSubChannelLayer subscribes a consumer's own channel in `new_channel()`,
which Channels awaits before the consumer exists: with Redis down, every WebSocket handshake
failed with a 500. The run stream must open then and go on from the database (webapp/runs/
consumers.py), so here `new_channel()` registers the channel in the process at once and, when
Redis does not answer, subscribes it on the next `receive()`, which raises until Redis is back;
the consumer waits that out. Group messages do not need the channel's own subscription: a
process subscribes the group and hands each message to its members' queues.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from channels_redis.pubsub import RedisPubSubChannelLayer, RedisPubSubLoopLayer
from channels_redis.utils import _wrap_close
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)


class _LoopLayer(RedisPubSubLoopLayer):
    """One event loop's layer: channels whose subscription waits for Redis are remembered."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.unsubscribed: set[str] = set()

    async def new_channel(self, prefix: str = "specific.") -> str:
        """A channel of this process; subscribed now, or by `receive()` once Redis answers."""
        channel = f"{self.prefix}{prefix}{uuid.uuid4().hex}"
        self.channels[channel] = asyncio.Queue()
        try:
            await self._get_shard(channel).subscribe(channel)
        except (OSError, TimeoutError, RedisError) as exc:
            logger.info("channel layer: %s not subscribed yet (%s)", channel, exc)
            self.unsubscribed.add(channel)
        return channel

    async def receive(self, channel: str) -> Any:
        """The channel's next message; subscribes it first if Redis did not answer before."""
        if channel in self.unsubscribed:
            try:
                await self._get_shard(channel).subscribe(channel)  # raises while Redis is down
            except asyncio.CancelledError:  # the consumer is gone: as the layer's own receive
                self.channels.pop(channel, None)
                self.unsubscribed.discard(channel)
                raise
            self.unsubscribed.discard(channel)
        return await super().receive(channel)


class PubSubChannelLayer(RedisPubSubChannelLayer):
    """RedisPubSubChannelLayer whose per-loop layers are `_LoopLayer`s."""

    def _get_layer(self) -> RedisPubSubLoopLayer:
        loop = asyncio.get_running_loop()
        layer = self._layers.get(loop)
        if layer is None:
            layer = _LoopLayer(*self._args, **self._kwargs, channel_layer=self)
            self._layers[loop] = layer
            _wrap_close(self, loop)
        return layer
