"""POST /api/graphs/<id>/revisions/<n>/weights/: weights trained elsewhere recorded as a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.models import Role
from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin
from webapp.api.serializers import NameField, StrictSerializer

from ..models import Run
from .runs import RunSerializer


class WeightsImportSerializer(StrictSerializer):
    """What POST /api/graphs/<id>/revisions/<n>/weights/ takes (multipart)."""

    file = serializers.FileField(help_text="A .safetensors file whose keys and shapes are the revision's "
                                 "state dict (`python -m engine import ... --weights-out`). Never a pickle.")
    name = NameField(required=False, allow_blank=True, max_length=200,
                                 help_text='The run\'s name (default "imported <file>").')


class RevisionWeightsView(TeamScopedMixin, generics.GenericAPIView):
    """POST /api/graphs/<id>/revisions/<n>/weights/: weights trained elsewhere as a first checkpoint.

    Answers the new run (succeeded, no dataset, origin {"kind": "import", "file"}) whose checkpoint
    `imported` a run's `init` can start from.
    """

    queryset = Run.objects.none()
    serializer_class = WeightsImportSerializer
    parser_classes = [MultiPartParser]

    def initialize_request(self, request: Any, *args: Any, **kwargs: Any) -> Request:
        """The weights limit applies while the file streams in. Set before anything reads the body:
        a browser session's CSRF check reads a multipart body while DRF authenticates, after which
        Django refuses new upload handlers (that was a 500 for every signed-in browser)."""
        from webapp.datasets.uploads import LimitedUploadHandler

        from ..inference.imports import max_weights_bytes

        request.upload_handlers = [LimitedUploadHandler(request, max_bytes=max_weights_bytes())]
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(request={"multipart/form-data": WeightsImportSerializer}, responses={201: RunSerializer})
    def post(self, request: Request, graph_pk: int, number: int) -> Response:
        from ..inference.imports import import_revision_for_user, run_import_create

        revision = import_revision_for_user(user=request.user, graph_id=graph_pk, number=number)
        # Role check against the graph's team before the file is parsed (a token request's body is
        # still unread here): editors import.
        self.require_role(revision.graph.team_id, Role.EDITOR)
        payload = WeightsImportSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        upload = payload.validated_data["file"]
        if not hasattr(upload, "temporary_file_path"):
            raise ApiError(status.HTTP_400_BAD_REQUEST, "invalid", "The upload was not stored; try again.",
                           fields={"file": ["The upload was not stored; try again."]})
        run = run_import_create(
            user=request.user, graph_revision=revision, upload_path=Path(upload.temporary_file_path()),
            file_name=upload.name or "weights.safetensors", name=payload.validated_data.get("name", ""),
        )
        run = Run.objects.select_related("graph_revision__graph", "dataset", "created_by").get(pk=run.pk)
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)
