"""GET /api/workers/: the workers, their devices and queues, what they train; GET /api/queue/: the
queued runs of the user's teams in the order they would start."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..scheduling.queue import queue_for_user, workers_for_user


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


class QueuedRunSerializer(serializers.Serializer):
    """A queued run as GET /api/queue/ shows it (scheduling.queue.queue_for_user)."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    team = serializers.IntegerField()
    priority = serializers.IntegerField(help_text="-10..10: the order among the team's own queued runs; "
                                        "PATCH /api/runs/<id>/ changes it while queued.")
    need = serializers.DictField(help_text="{kind: cpu | gpu | any, devices}: which workers fit it.")
    created_at = serializers.DateTimeField()
    position = serializers.IntegerField(help_text="1: next. Counts every team's runs ahead of it.")
    ahead = serializers.IntegerField()
    waiting_for = serializers.ChoiceField(choices=["team_limit", "no_fitting_worker", "behind", "kueue"])
    detail = serializers.CharField()


class QueueView(APIView):
    """GET /api/queue/: the queued runs of the user's teams, first to start first."""

    @extend_schema(responses=QueuedRunSerializer(many=True))
    def get(self, request: Request) -> Response:
        """Where each of your teams' queued runs stands and why it waits (other teams' runs count,
        unnamed, in the positions)."""
        return Response(QueuedRunSerializer(queue_for_user(user=request.user), many=True).data)
