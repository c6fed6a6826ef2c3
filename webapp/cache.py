"""Django's cache on Redis: JSON values, never pickle, and no 500 while Redis is down.

Django's Redis backend pickles what it stores by default; nothing the service writes or reads is
pickle, so a value in the cache is one JSON document (orjson: a run's detail document is mostly
floats). Integers stay plain digits, which Redis's INCR reads as they are.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
import redis
from django.core.cache.backends.redis import RedisCache

logger = logging.getLogger(__name__)


class JSONSerializer:
    """dumps/loads as Django's RedisCacheClient calls its serializer."""

    def dumps(self, obj: Any) -> bytes | int:
        # An int stays an int, as Django's own serializer keeps it, so incr() works on it.
        if type(obj) is int:
            return obj
        return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)

    def loads(self, data: bytes) -> Any:
        try:
            return int(data)
        except ValueError:
            return orjson.loads(data)


class TolerantRedisCache(RedisCache):
    """Django's Redis cache, for values that can always be read again from the database: while
    Redis cannot be reached a read misses and a write is dropped (one warning per outage), so a
    broker outage never turns a request into a 500 (docs/reliability.md). What is kept expires
    on its own (TIMEOUT); a delete that could not reach Redis is bounded by that time."""

    def validate_key(self, key: Any) -> None:
        """Redis takes any key: the memcached portability warnings (a scan of every character of
        every key, a tenth of a cached run detail's time) check nothing it needs."""

    def _tolerant(self, default: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            result = getattr(super(), method)(*args, **kwargs)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            if not _down[0]:
                logger.warning("the cache's Redis cannot be reached (%s): reading from the database", exc)
            _down[0] = True
            return default
        _down[0] = False
        return result

    def get(self, key: Any, default: Any = None, version: Any = None) -> Any:
        return self._tolerant(default, "get", key, default, version)

    def get_many(self, keys: Any, version: Any = None) -> Any:
        return self._tolerant({}, "get_many", keys, version)

    def set(self, *args: Any, **kwargs: Any) -> None:
        self._tolerant(None, "set", *args, **kwargs)

    def add(self, *args: Any, **kwargs: Any) -> bool:
        return self._tolerant(False, "add", *args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> bool:
        return self._tolerant(False, "delete", *args, **kwargs)

    def delete_many(self, *args: Any, **kwargs: Any) -> None:
        self._tolerant(None, "delete_many", *args, **kwargs)


_down = [False]
