"""Serializers shared by several apps."""

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
