"""Django's cache stores JSON here, never pickle (settings.caches: OPTIONS "serializer").

Django's Redis backend pickles what it stores by default; nothing the service writes or reads is
pickle, so a value in the cache is one JSON document (orjson: a run's detail document is mostly
floats). Integers stay plain digits, which Redis's INCR reads as they are.
"""

from __future__ import annotations

from typing import Any

import orjson


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
