"""The model server's one Django-facing module: the registry's aliases and the API's tokens.

`python -m serving` runs this: Django set up for reads only (webapp.registry.selectors,
webapp.accounts.selectors), then serving.server on SERVING_PORT.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from .server import Entry, Identity, serve


class RegistryDirectory:
    """serving.server.Directory over the Django registry and accounts, told of alias moves on
    Redis (webapp.registry.services publishes after each commit)."""

    def __init__(self) -> None:
        self._pubsub: Any = None

    def wait_for_change(self, timeout: float) -> bool:
        """Wait up to `timeout` s for an alias move message; False on a timeout or without Redis."""
        import redis
        from django.conf import settings

        from webapp.registry.services import serving_channel

        try:
            if self._pubsub is None:
                client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1)
                self._pubsub = client.pubsub(ignore_subscribe_messages=True)
                self._pubsub.subscribe(serving_channel())
            deadline = time.monotonic() + timeout
            while (left := deadline - time.monotonic()) > 0:
                # None also for an ignored subscribe confirmation, before the timeout.
                if self._pubsub.get_message(timeout=left) is not None:
                    return True
            return False
        except (redis.RedisError, OSError):
            self._pubsub = None
            time.sleep(timeout)
            return False

    def snapshot(self) -> dict[int, Entry]:
        from django.db import close_old_connections

        from webapp.registry.selectors import served_models

        close_old_connections()
        return {row["model"]: Entry(model_id=row["model"], team_id=row["team"], served_name=row["served_name"],
                                    aliases=dict(row["aliases"]), folders=dict(row["folders"]))
                for row in served_models()}

    def authenticate(self, token: str) -> Identity | None:
        from django.db import close_old_connections

        from webapp.accounts.selectors import teams_for_user, token_for_secret

        close_old_connections()
        found = token_for_secret(raw_token=token)
        if found is None or not found.user.is_active:
            return None
        teams = frozenset(teams_for_user(user=found.user).values_list("pk", flat=True))
        return Identity(user_id=found.user.pk, team_ids=teams)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    logging.basicConfig(level=os.environ.get("SERVING_LOG_LEVEL", "INFO"))
    serve(RegistryDirectory(), port=int(os.environ.get("SERVING_PORT", "8090")))
