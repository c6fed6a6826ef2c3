"""JSON parser with a size limit (DRF reads the stream directly and would take any size)."""

from __future__ import annotations

import codecs
import json
from typing import Any

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from .errors import ApiError


class LimitedJSONParser(parsers.JSONParser):
    """Reads at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes; larger bodies are a 413."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        """Parse a JSON body, refusing oversized ones before reading them whole."""
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise ApiError(413, "payload_too_large", f"The JSON body is larger than {limit} bytes.")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.decode(raw, encoding)
            data = json.loads(text, parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise ParseError(f"Malformed JSON: {exc}") from None
        # PostgreSQL's jsonb cannot hold U+0000 (found by schemathesis: a 500 on save).
        if "\\u0000" in text and holds_nul(data):
            raise ParseError("Malformed JSON: a string holds the NUL character (\\u0000).")
        return data


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def holds_nul(value: Any) -> bool:
    """Whether any string or key in a parsed JSON value contains U+0000."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
