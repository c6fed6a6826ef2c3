"""The engine's catalogs for the browser's forms: the training-config schema, the explanation methods."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..selectors import run_config_schema
from .schema import ConfigSchemaAnswer, ExplanationMethodsAnswer


class ConfigSchemaView(APIView):
    """GET /api/runs/config-schema/: the engine's TrainConfig JSON Schema and its defaults."""

    @extend_schema(responses=ConfigSchemaAnswer)
    def get(self, request: Request) -> Response:
        """{"schema": TrainConfig.model_json_schema(), "defaults": TrainConfig() as JSON}."""
        return Response(run_config_schema())


class ExplanationMethodsView(APIView):
    """GET /api/explanations/methods/: the engine's explanation methods."""

    @extend_schema(responses=ExplanationMethodsAnswer)
    def get(self, request: Request) -> Response:
        """{"methods": engine.explain.METHODS} ({name, label, has_delta, needs_layer, help} each)."""
        from engine.explain import METHODS

        return Response({"methods": METHODS})
