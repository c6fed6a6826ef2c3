"""Serializers and fields shared by several apps: the bounds every request value is held to.

Together with the JSON parser (webapp/api/parsers.py: no integer beyond 64 bits, no NaN or
infinity, no NUL or lone surrogate anywhere in a body) these are the one validation layer at the
edge: an integer bound for a column is bounded by that column's range (`column_range`,
`ColumnBounds`), a name refuses control, formatting and bidi-override characters (`NameField`), so
nothing a column cannot hold or a page cannot show safely is ever stored.
"""

import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from django.core.validators import RegexValidator
from django.db import models
from django.db.backends.base.operations import BaseDatabaseOperations
from rest_framework import serializers


class UserRefSerializer(serializers.Serializer):
    """A user as other objects mention them: {"id", "username"}."""

    id = serializers.IntegerField()
    username = serializers.CharField()


ID_MAX = 2**63 - 1  # the largest id a database column holds (bigint)


# An id in a query string (?graph=3), as the OpenAPI schema states it: what IdField takes in a body.
ID_PARAMETER: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": ID_MAX}


def comma_separated(values: Iterable[str]) -> dict[str, Any]:
    """A query parameter of comma-separated `values` (?status=running,failed), as the schema states it."""
    choice = "|".join(re.escape(value) for value in values)
    return {"type": "string", "pattern": f"^({choice})(,({choice}))*$"}


class IdField(serializers.IntegerField):
    """The id of an object in a request body: 1 up to the largest a database column holds.

    A larger number could never name a row, and SQLite refuses to bind it (a 500 otherwise).
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", ID_MAX)
        super().__init__(**kwargs)


def column_range(model: type[models.Model], field_name: str) -> tuple[int, int]:
    """The smallest and largest integer the model's column holds, the same on every database.

    PostgreSQL's ranges (Django's portable table): SQLite would store any 64-bit integer in an
    IntegerField column, PostgreSQL refuses past 2**31 - 1 with a 500.
    """
    internal = model._meta.get_field(field_name).get_internal_type()
    return BaseDatabaseOperations.integer_field_ranges[internal]


def column_bounds(model: type[models.Model], field_name: str, **tighter: int) -> dict[str, int]:
    """min_value/max_value for an IntegerField of this column; a tighter bound given here wins."""
    low, high = column_range(model, field_name)
    return {"min_value": max(low, tighter.get("min_value", low)),
            "max_value": min(high, tighter.get("max_value", high))}


# Characters a name may not hold: controls (tab and newline too: a name is one line), surrogates,
# line/paragraph separators and the formatting characters of the Basic Multilingual Plane, which
# include the bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069: text that reads
# differently from what it is, CVE-2021-42574), zero-width spaces and the BOM. The zero-width
# (non-)joiner stays (scripts and emoji sequences need it), and so do the format characters past
# U+FFFF (emoji tag sequences, musical and hieroglyph notation), which change no text direction.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
_JOINERS = frozenset({"\u200c", "\u200d"})


def _refused(char: str) -> bool:
    category = unicodedata.category(char)
    return category == "Cs" or (category in _REFUSED_CATEGORIES and ord(char) <= 0xFFFF and char not in _JOINERS)


def _name_pattern() -> str:
    """The same rule as a regular expression the OpenAPI schema carries: `^[^...]*$` over the BMP."""
    ranges: list[tuple[int, int]] = []
    for code in range(0x10000):
        if 0xD800 <= code <= 0xDFFF or not _refused(chr(code)):  # a lone surrogate never parses
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    parts = "".join(f"\\u{a:04x}" if a == b else f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges)
    return f"^[^{parts}]*$"


NAME_PATTERN = _name_pattern()


def name_problem(value: str) -> str | None:
    """Why `value` cannot be a name (the first refused character, as U+XXXX), or None."""
    for char in value:
        if _refused(char):
            kind = "bidi control" if "\u202a" <= char <= "\u202e" or "\u2066" <= char <= "\u2069" else "control"
            return (f"A name may not hold {kind} characters "
                    f"(U+{ord(char):04X} {unicodedata.name(char, 'unnamed')}).")
    return None


class NameField(serializers.CharField):
    """A name shown in lists and titles: one line of visible text (`name_problem`).

    The schema states the rule as a pattern (NAME_PATTERN, from a RegexValidator that
    to_internal_value's clearer message always answers first).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators.append(RegexValidator(NAME_PATTERN))

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        problem = name_problem(value)
        if problem is not None:
            raise serializers.ValidationError(problem, code="invalid_character")
        return value


class ColumnBounds:
    """For a ModelSerializer: writable integers bounded by their column, `name` a NameField."""

    def build_standard_field(self, field_name: str, model_field: Any) -> tuple[type, dict[str, Any]]:
        field_class, kwargs = super().build_standard_field(field_name, model_field)  # type: ignore[misc]
        if issubclass(field_class, serializers.IntegerField):
            internal = model_field.get_internal_type()
            if internal in BaseDatabaseOperations.integer_field_ranges:
                low, high = BaseDatabaseOperations.integer_field_ranges[internal]
                kwargs["min_value"] = max(low, kwargs.get("min_value", low))
                kwargs["max_value"] = min(high, kwargs.get("max_value", high))
        elif field_class is serializers.CharField and field_name == "name":
            field_class = NameField
        return field_class, kwargs


class KnownFieldsOnly:
    """A request body may hold only this serializer's fields: any other key is refused by name.

    DRF drops keys it does not know, so a misplaced setting was silently lost: `{"epochs": 5}` beside
    `config` in POST /api/runs/ trained the default 10 epochs, `-F target=label` on a CSV upload
    left the dataset without a target. Read-only fields are still accepted (and ignored), so an
    object read from the API can be sent back. `hint_for` names, for keys a user is likely to put
    in the wrong place, where they belong.
    """

    def to_internal_value(self, data: Any) -> Any:
        """DRF's validation, with every key that is not a field refused beside its errors."""
        fields = self.fields  # type: ignore[attr-defined]
        try:
            require_known_fields(data, [name for name, field in fields.items() if not field.read_only],
                                 also=fields, hint_for=self.hint_for)
        except serializers.ValidationError as unknown:
            try:
                super().to_internal_value(data)  # type: ignore[misc]
            except serializers.ValidationError as invalid:
                if isinstance(invalid.detail, dict):
                    raise serializers.ValidationError({**invalid.detail, **unknown.detail}) from None
            raise
        return super().to_internal_value(data)  # type: ignore[misc]

    def hint_for(self, key: str) -> str | None:
        """Where a misplaced key belongs, when this serializer knows (None: the generic answer)."""
        return None


def require_known_fields(data: Any, takes: list[str], *, also: Any = (),
                         hint_for: Any = lambda key: None) -> None:
    """Refuse (400, each key named) a body whose keys are not among `takes` (or `also`: fields
    accepted and ignored). The rule of KnownFieldsOnly, for views that read a body by hand."""
    if not isinstance(data, Mapping):
        return
    unknown = [str(key) for key in data if key not in takes and key not in also]
    if unknown:
        listed = ", ".join(takes)
        raise serializers.ValidationError(
            {key: [hint_for(key) or f"Not a field of this request; it takes: {listed}."] for key in unknown}
        )


class StrictSerializer(KnownFieldsOnly, serializers.Serializer):
    """A request body's serializer: its fields only (KnownFieldsOnly)."""


class TrainingSettingHints:
    """For a body that takes `config`: a training setting sent beside config is named as one."""

    def hint_for(self, key: str) -> str | None:
        """'send it inside config' for a TrainConfig field, else None (the generic answer)."""
        from engine.train.config import TrainConfig

        if key in TrainConfig.model_fields:
            return f'A training setting: send it inside "config" ({{"config": {{"{key}": ...}}}}).'
        return None
