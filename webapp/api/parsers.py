"""JSON parser with a size limit and bounded values (DRF reads the stream directly and would take any size).

Every JSON body is also held to what the service can store and answer again
(`json_value_problem`): a string with U+0000 (PostgreSQL's jsonb cannot hold it) or half a
surrogate pair (neither database can encode it), an integer outside a signed 64-bit column (SQLite
refuses to bind it; orjson, which renders every answer, cannot write it back: one stored explanation
with `"index": 2**64` made its run's list answer 500 for everyone), or a number too large for a
float (`1e400` parses as infinity). Each is a 400 naming the path of the value ("spec.nodes.3.params.
out_features"), before any serializer or service sees the body.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from typing import Any

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from .errors import ApiError

SPEC_ENVELOPE_BYTES = 64 * 1024
INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # a signed 64-bit column (bigint), and orjson's range
# A JSON escape of a surrogate: the only way one reaches a str decoded from UTF-8.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class LimitedJSONParser(parsers.JSONParser):
    """Reads at most `limit()` bytes (DATA_UPLOAD_MAX_MEMORY_SIZE); larger bodies are a 413."""

    what = "The JSON body"

    def limit(self) -> int:
        """The most bytes a body parsed here may hold."""
        return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        """Parse a JSON body, refusing oversized ones before reading them whole."""
        limit = self.limit()
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise ApiError(413, "payload_too_large", f"{self.what} is larger than the limit of {limit} bytes.")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        unusual = False

        def number(text: str) -> Any:
            nonlocal unusual
            value = float(text) if any(c in text for c in ".eE") else int(text)
            if isinstance(value, float) and not math.isfinite(value) or isinstance(value, int) and not (
                INT_MIN <= value <= INT_MAX
            ):
                unusual = True
            return value

        try:
            text = codecs.decode(raw, encoding)
            data = json.loads(text, parse_constant=_reject_constant, parse_int=number, parse_float=number)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise ParseError(f"Malformed JSON: {exc}") from None
        if unusual or "\\u0000" in text or _SURROGATE_ESCAPE.search(text):
            refuse_json_value(data)
        return data


class SpecJSONParser(LimitedJSONParser):
    """A body that carries a graph spec or a block: at most NETLOOM_MAX_SPEC_BYTES (else 413)."""

    what = "A body with a graph spec (NETLOOM_MAX_SPEC_BYTES and its other fields)"

    def limit(self) -> int:
        """The spec's limit and room for the fields beside it (a name, a description)."""
        return min(int(settings.NETLOOM_MAX_SPEC_BYTES) + SPEC_ENVELOPE_BYTES, int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def json_value_problem(value: Any) -> tuple[str, str] | None:
    """(path, what is wrong) for the first value in parsed JSON the service cannot store, else None.

    The path is dotted from the top ("spec.nodes.3.params.out_features"; "" for the value itself).
    """
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return path, "A string holds the NUL character (\\u0000)."
            if _SURROGATE.search(item):
                return path, "A string holds half of a UTF-16 surrogate pair (\\ud800-\\udfff alone)."
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if not INT_MIN <= item <= INT_MAX:
                return path, f"An integer from {INT_MIN} to {INT_MAX} (a 64-bit column) is required."
        elif isinstance(item, float):
            if not math.isfinite(item):
                return path, "A finite number is required (this one is too large for a 64-bit float)."
        elif isinstance(item, dict):
            for key, child in item.items():
                inner = f"{path}.{key}" if path else str(key)
                problem = json_value_problem(key) if isinstance(key, str) else None
                if problem is not None:
                    return inner, f"In a key: {problem[1]}"
                stack.append((inner, child))
        elif isinstance(item, list):
            stack.extend((f"{path}.{i}" if path else str(i), child) for i, child in enumerate(item))
    return None


def refuse_json_value(data: Any) -> None:
    """A 400 naming the first value of a parsed body the service cannot store (json_value_problem)."""
    problem = json_value_problem(data)
    if problem is not None:
        path, message = problem
        field = path or "non_field_errors"
        raise ApiError(400, "invalid", f"{path}: {message}" if path else message, fields={field: [message]})
