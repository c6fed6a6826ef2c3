"""Telling a user's open streams, and the model server, that their access changed (a token
revoked, a team left).

Each stream consumer joins the group `user.<id>` of its user; on `access.changed` it checks
its credentials and the run's team again and closes when they no longer hold. The message is a
hint: consumers also re-check on their own every few seconds, so a lost message (Redis down)
delays the close, never prevents it.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)


def user_group(user_id: int) -> str:
    """The channel-layer group of one user's open streams."""
    return f"user.{user_id}"


def serving_access_channel() -> str:
    """The Redis channel the model server listens on for access changes (serving/registry_link.py)."""
    return f"{settings.NETLOOM_INSTANCE}:serving:access"


def access_changed(*, user_id: int) -> None:
    """After the current transaction commits, ask the user's open streams to check access, and
    tell the model server to drop its kept check of the user's tokens and sessions."""

    def send() -> None:
        _tell_model_server(user_id)
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            async_to_sync(layer.group_send)(user_group(user_id), {"type": "access.changed"})
        except Exception as exc:  # the consumers' own periodic check still closes them
            logger.warning("could not tell user %s's streams that access changed: %s", user_id, exc)

    transaction.on_commit(send)


def _tell_model_server(user_id: int) -> None:
    """Publish the user's id for the model server (a hint: without it the server's kept check of a
    token expires within seconds)."""
    import redis

    try:
        with redis.Redis.from_url(settings.REDIS_URL, socket_timeout=0.5, socket_connect_timeout=0.5) as client:
            client.publish(serving_access_channel(), str(user_id))
    except redis.RedisError as exc:
        logger.warning("could not tell the model server that user %s's access changed: %s", user_id, exc)
