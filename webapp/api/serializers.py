"""Serializers shared by several apps."""

from rest_framework import serializers


class UserRefSerializer(serializers.Serializer):
    """A user as other objects mention them: {"id", "username"}."""

    id = serializers.IntegerField()
    username = serializers.CharField()
