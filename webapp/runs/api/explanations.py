"""The explanations API: a run's explanations as JSON, one explanation and its PNG."""

from __future__ import annotations

from typing import Any

from django.http import FileResponse
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request

from webapp.api.mixins import TeamScopedMixin
from webapp.api.renderers import FileFormatNegotiation
from webapp.api.serializers import ID_MAX, StrictSerializer, column_bounds

from ..inference.explanations import explanation_image
from ..models import Explanation, ExplanationStatus
from .schema import PNG_IMAGE, ExplanationResultField, ExplanationSampleField


class ExplanationSerializer(serializers.ModelSerializer):
    """An explanation with its result (attributions, prediction, delta) once computed."""

    image = serializers.SerializerMethodField()
    sample = ExplanationSampleField(read_only=True)
    result = ExplanationResultField(read_only=True)

    class Meta:
        model = Explanation
        fields = ["id", "run", "method", "sample", "target", "layer", "status", "result", "error",
                  "image", "created_at", "finished_at"]
        read_only_fields = fields

    def get_image(self, explanation: Explanation) -> str | None:
        """URL of the rendering (PNG) once there is one."""
        if explanation.status != ExplanationStatus.SUCCEEDED:
            return None
        return f"/api/explanations/{explanation.pk}/image/"


class ExplanationCreateSerializer(StrictSerializer):
    """What POST /api/runs/<id>/explanations/ takes."""

    # The index is stored in the sample's JSON: at most what a 64-bit integer holds (as an id).
    index = serializers.IntegerField(required=False, min_value=0, max_value=ID_MAX, allow_null=True, default=None)
    input = serializers.JSONField(
        required=False, default=None,
        help_text="Numbers of the feature shape, or a row as in the CSV {column: raw value}.",
    )
    image = serializers.CharField(
        required=False, allow_null=True, default=None,
        help_text="An uploaded image as a data: URL (or base64), instead of index or input.",
    )
    method = serializers.CharField(default="integrated_gradients")
    target = serializers.IntegerField(required=False, allow_null=True, default=None,
                                      **column_bounds(Explanation, "target", min_value=0))
    layer = serializers.CharField(required=False, allow_blank=True, allow_null=True, default=None)
    checkpoint = serializers.CharField(
        required=False, allow_null=True, default=None,
        help_text="Explain a kept checkpoint's weights (its name) instead of the trained model.",
    )


class ExplanationViewSet(TeamScopedMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Explanations of the user's teams' runs."""

    queryset = Explanation.objects.select_related("run")
    serializer_class = ExplanationSerializer
    team_lookup = "run__team"

    @extend_schema(responses={(200, "image/png"): PNG_IMAGE})
    @action(detail=True, methods=["get"], content_negotiation_class=FileFormatNegotiation)
    def image(self, request: Request, pk: str | None = None) -> Any:
        """The rendering as PNG (heat map over an image, bars over tabular features)."""
        explanation = self.get_object()
        return FileResponse(explanation_image(explanation=explanation).open("rb"), content_type="image/png",
                            filename=f"explanation-{explanation.pk}.png")
