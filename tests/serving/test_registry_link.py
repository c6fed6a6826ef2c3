"""The model server hears of an alias move on Redis at once (the poll is the fallback)."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
import redis


@pytest.mark.django_db(transaction=True)
def test_an_alias_move_announced_after_commit_wakes_the_server(settings: Any) -> None:
    from serving.registry_link import RegistryDirectory
    from webapp.registry.services import _announce_aliases

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1).ping()
    except redis.RedisError:
        pytest.skip("needs Redis")
    settings.NETLOOM_INSTANCE = f"nltest-serving-{uuid.uuid4().hex[:8]}"
    directory = RegistryDirectory()
    assert directory.wait_for_change(0.2) is False  # subscribed; nothing moved
    threading.Timer(0.3, lambda: _announce_aliases(7)).start()  # no transaction: sent at once
    started = time.monotonic()
    assert directory.wait_for_change(10.0) is True
    assert time.monotonic() - started < 10.0
    assert directory.wait_for_change(0.2) is False
