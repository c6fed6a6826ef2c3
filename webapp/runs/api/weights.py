"""Weights trained elsewhere recorded as a run: POST /api/graphs/<id>/revisions/<n>/weights/ for a
revision that exists, POST /api/graphs/import/ for a new graph and its weights in one step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.models import Role
from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin
from webapp.api.serializers import IdField, NameField, StrictSerializer

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


class GraphImportSerializer(StrictSerializer):
    """What POST /api/graphs/import/ takes (multipart): a spec file's content and, optionally, weights."""

    team = IdField()
    name = NameField(max_length=200)
    spec = serializers.JSONField(help_text="The graph spec (`python -m engine import` wrote it), as JSON text.")
    file = serializers.FileField(required=False, help_text="Optional: the weights for revision 1, as "
                                 "POST /api/graphs/<id>/revisions/<n>/weights/ takes them.")


class GraphImportAnswer(serializers.Serializer):
    """The graph made by an import, and the run holding its weights (null without weights)."""

    graph = IdField()
    name = serializers.CharField()
    revision = serializers.IntegerField()
    run = RunSerializer(allow_null=True)


class GraphImportView(TeamScopedMixin, generics.GenericAPIView):
    """POST /api/graphs/import/: a spec and its weights as a new graph, all or nothing.

    Refused weights (400 on `file`) leave no graph behind, so a second try does not make a second
    graph; without a file it is POST /api/graphs/ with the spec.
    """

    queryset = Run.objects.none()
    serializer_class = GraphImportSerializer
    parser_classes = [MultiPartParser, JSONParser]  # JSON: a spec alone

    def initialize_request(self, request: Any, *args: Any, **kwargs: Any) -> Request:
        """The weights limit applies while the file streams in (see RevisionWeightsView)."""
        from webapp.datasets.uploads import LimitedUploadHandler

        from ..inference.imports import max_weights_bytes

        request.upload_handlers = [LimitedUploadHandler(request, max_bytes=max_weights_bytes())]
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(request={"multipart/form-data": GraphImportSerializer}, responses={201: GraphImportAnswer})
    def post(self, request: Request) -> Response:
        from ..inference.imports import graph_import_create

        payload = GraphImportSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        team = self.team_for_write(data["team"])
        upload = data.get("file")
        if upload is not None and not hasattr(upload, "temporary_file_path"):
            raise ApiError(status.HTTP_400_BAD_REQUEST, "invalid", "The upload was not stored; try again.",
                           fields={"file": ["The upload was not stored; try again."]})
        graph, run = graph_import_create(
            user=request.user, team=team, name=data["name"], spec=data["spec"],
            upload_path=Path(upload.temporary_file_path()) if upload is not None else None,
            file_name=(upload.name or "weights.safetensors") if upload is not None else "",
        )
        if run is not None:
            run = Run.objects.select_related("graph_revision__graph", "dataset", "created_by").get(pk=run.pk)
        body = {"graph": graph.pk, "name": graph.name, "revision": 1, "run": RunSerializer(run).data if run else None}
        return Response(body, status=status.HTTP_201_CREATED)
