"""GET /api/workers/: the workers, their devices and queues, what they train."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..scheduling.queue import workers_for_user


class WorkerSerializer(serializers.Serializer):
    """A worker as GET /api/workers/ shows it (selectors.workers_for_user)."""

    hostname = serializers.CharField()
    kind = serializers.ChoiceField(choices=["cpu", "gpu"])
    devices = serializers.ListField(child=serializers.CharField())
    capacity = serializers.IntegerField(help_text="Most devices (processes) one run may use on it.")
    queues = serializers.ListField(child=serializers.CharField())
    trains = serializers.BooleanField(help_text="True when it consumes a train queue (else short jobs only).")
    busy = serializers.BooleanField(help_text="True while it trains a run (of any team).")
    current_run = serializers.DictField(
        allow_null=True, help_text="{id, name} of the run it trains, when that run's team is one of yours; else null."
    )
    started_at = serializers.DateTimeField()
    last_seen = serializers.DateTimeField()
    alive = serializers.BooleanField(help_text="Heard from within the run lease (it announces every few seconds).")


class WorkerListView(APIView):
    """GET /api/workers/: the workers, their devices and queues, what they train, when last seen."""

    @extend_schema(responses=WorkerSerializer(many=True))
    def get(self, request: Request) -> Response:
        """Every worker seen within a day (any signed-in user; another team's run is not named)."""
        return Response(WorkerSerializer(workers_for_user(user=request.user), many=True).data)
