"""POST /api/runs/init-plan/: what starting a graph from a checkpoint would load."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from engine.train.config import MAX_EPOCHS
from webapp.api.serializers import IdField, StrictSerializer

from ..checks import init_plan_read
from ..selectors import run_graph_revision_ref
from .schema import InitPlanAnswer


class InitPlanRequestSerializer(StrictSerializer):
    """What POST /api/runs/init-plan/ takes: the graph to start and the checkpoint to start it from."""

    graph = IdField(required=False)
    revision = IdField(required=False)
    graph_revision = IdField(required=False)
    from_run = IdField()
    checkpoint = serializers.CharField()
    mode = serializers.ChoiceField(choices=["finetune", "resume"], default="finetune")
    epochs = serializers.IntegerField(required=False, min_value=1, max_value=MAX_EPOCHS, help_text="The new run's epochs (resume checks them).")
    freeze = serializers.ListField(
        child=serializers.CharField(), required=False, max_length=1000,
        help_text="The new run's config.freeze: a node whose parameters do not load is a problem.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """`graph_revision`, or `graph` (with `revision`, the latest by default)."""
        if not attrs.get("graph_revision") and not attrs.get("graph"):
            raise serializers.ValidationError({"graph": ["Give graph (and revision) or graph_revision."]})
        return attrs


class InitPlanView(APIView):
    """POST /api/runs/init-plan/: what starting a graph from a checkpoint would load (no side effects)."""

    @extend_schema(request=InitPlanRequestSerializer, responses=InitPlanAnswer)
    def post(self, request: Request) -> Response:
        """The engine's InitPlan (loaded, mismatched, new, unused) and the `problems` a create would refuse."""
        body = InitPlanRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        revision = run_graph_revision_ref(
            user=request.user, graph_revision_id=data.get("graph_revision"), graph_id=data.get("graph"),
            revision=data.get("revision"),
        )
        init = {"run": data["from_run"], "checkpoint": data["checkpoint"], "mode": data["mode"]}
        return Response(init_plan_read(user=request.user, graph_revision=revision, init=init,
                                       epochs=data.get("epochs"), freeze=data.get("freeze")))
