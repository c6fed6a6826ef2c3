"""Serializers shared by several apps."""

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers


class UserRefSerializer(serializers.Serializer):
    """A user as other objects mention them: {"id", "username"}."""

    id = serializers.IntegerField()
    username = serializers.CharField()


ID_MAX = 2**63 - 1  # the largest id a database column holds (bigint)


class IdField(serializers.IntegerField):
    """The id of an object in a request body: 1 up to the largest a database column holds.

    A larger number could never name a row, and SQLite refuses to bind it (a 500 otherwise).
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", ID_MAX)
        super().__init__(**kwargs)


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
