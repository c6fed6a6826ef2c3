"""REST API of runs: create, list, detail, cancel, metrics, checkpoints, explanations, export;
the engine's training-config schema and explanation methods for the browser's forms."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.accounts.models import Role
from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin, scope_to_user_teams

from . import services
from .events import run_progress
from .models import Checkpoint, Explanation, ExplanationStatus, Run, RunStatus
from .selectors import (
    run_download_name,
    run_export_dir,
    run_export_zip,
    run_exports,
    run_metric_series,
)

EXPORT_FORMATS: dict[str, tuple[str, str, str]] = {
    # format: (file in the export folder, suffix of the download, content type)
    "safetensors": ("model.safetensors", ".safetensors", "application/octet-stream"),
    "python": ("model.py", ".py", "text/x-python"),
    "onnx": ("model.onnx", ".onnx", "application/octet-stream"),
    "config": ("config.json", "-config.json", "application/json"),
    "zip": ("", ".zip", "application/zip"),
}


class RunSerializer(serializers.ModelSerializer):
    """A run as the API shows it."""

    graph = serializers.IntegerField(source="graph_revision.graph_id", read_only=True)
    graph_name = serializers.CharField(source="graph_revision.graph.name", read_only=True)
    revision = serializers.IntegerField(source="graph_revision.number", read_only=True)
    dataset_name = serializers.CharField(source="dataset.name", read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)
    progress = serializers.SerializerMethodField()
    last_seq = serializers.IntegerField(source="event_seq", read_only=True)
    stream = serializers.SerializerMethodField()
    exports = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = [
            "id", "team", "graph", "graph_name", "graph_revision", "revision", "dataset",
            "dataset_name", "config", "recipe", "status", "progress", "latest_metrics",
            "final_metrics", "error", "cancel_requested", "attempts", "max_attempts", "worker",
            "heartbeat_at", "created_by", "created_at", "started_at", "finished_at", "last_seq",
            "stream", "exports",
        ]
        read_only_fields = fields

    def get_progress(self, run: Run) -> dict[str, Any]:
        """Epoch, step, total steps, fraction done and the estimated seconds left."""
        return run_progress(run)

    def get_exports(self, run: Run) -> dict[str, Any]:
        """Which downloads exist: {status, safetensors, python, config, zip, onnx, note} (selectors.run_exports)."""
        return run_exports(run)

    def get_stream(self, run: Run) -> str:
        """Path of the run's WebSocket stream."""
        return f"/ws/runs/{run.pk}/"


class RunCreateSerializer(serializers.Serializer):
    """What POST /api/runs/ takes: a graph revision, a dataset and a (partial) training config."""

    team = serializers.IntegerField(required=False, min_value=1)
    graph = serializers.IntegerField(required=False, min_value=1)
    revision = serializers.IntegerField(required=False, min_value=1)
    graph_revision = serializers.IntegerField(required=False, min_value=1)
    dataset = serializers.IntegerField(min_value=1)
    config = serializers.JSONField(required=False, default=dict)
    transforms = serializers.JSONField(required=False, default=None)
    split = serializers.JSONField(required=False, default=None)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """A run needs `graph_revision`, or `graph` (with `revision`, the latest by default)."""
        if not attrs.get("graph_revision") and not attrs.get("graph"):
            raise serializers.ValidationError({"graph": ["Give graph (and revision) or graph_revision."]})
        return attrs


class CheckpointSerializer(serializers.ModelSerializer):
    """A checkpoint of a run (its folder stays on the server)."""

    name = serializers.SerializerMethodField()
    available = serializers.SerializerMethodField()

    class Meta:
        model = Checkpoint
        fields = ["step", "epoch", "name", "available", "created_at"]

    def get_name(self, checkpoint: Checkpoint) -> str:
        """The checkpoint folder's name (`epoch-0003`, `step-0000120`, `best`)."""
        return Path(checkpoint.path).name

    def get_available(self, checkpoint: Checkpoint) -> bool:
        """False once training pruned it (only the last few are kept)."""
        return Path(checkpoint.path).is_dir()


class ExplanationSerializer(serializers.ModelSerializer):
    """An explanation with its result (attributions, prediction, delta) once computed."""

    image = serializers.SerializerMethodField()

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


class ExplanationCreateSerializer(serializers.Serializer):
    """What POST /api/runs/<id>/explanations/ takes."""

    index = serializers.IntegerField(required=False, min_value=0, allow_null=True, default=None)
    input = serializers.JSONField(required=False, default=None)
    method = serializers.CharField(default="integrated_gradients")
    target = serializers.IntegerField(required=False, min_value=0, allow_null=True, default=None)
    layer = serializers.CharField(required=False, allow_blank=True, allow_null=True, default=None)


class _AnyFormat(DefaultContentNegotiation):
    """Downloads use `?format=` for the file format, not for choosing a DRF renderer."""

    def select_renderer(self, request: Request, renderers: list[Any], format_suffix: str | None = None) -> tuple[Any, str]:
        """Always the first renderer (JSON, for error bodies)."""
        return renderers[0], renderers[0].media_type


class RunViewSet(TeamScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Runs of the user's teams. Viewers read; editors create, cancel and explain."""

    queryset = Run.objects.select_related("graph_revision__graph", "dataset", "created_by")
    serializer_class = RunSerializer
    team_lookup = "team"
    write_role = Role.EDITOR

    def get_queryset(self) -> Any:
        """Scoped runs, optionally filtered by `?status=`, `?graph=`, `?dataset=`."""
        runs = super().get_queryset()
        params = self.request.query_params
        if params.get("status"):
            runs = runs.filter(status__in=params["status"].split(","))
        for name, lookup in (("graph", "graph_revision__graph_id"), ("dataset", "dataset_id")):
            if params.get(name):
                try:
                    runs = runs.filter(**{lookup: int(params[name])})
                except ValueError:
                    raise ApiError(400, "invalid", f"{name} must be an id.", fields={name: ["Must be an integer id."]}) from None
        return runs

    def create(self, request: Request) -> Response:
        """Validate everything, then queue the run (201 with the run)."""
        from webapp.datasets.models import Dataset
        from webapp.graphs.models import GraphRevision

        body = RunCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        revisions = scope_to_user_teams(
            GraphRevision.objects.select_related("graph"), user=request.user, team_lookup="graph__team"
        )
        if data.get("graph_revision"):
            revision = revisions.filter(pk=data["graph_revision"]).first()
            if revision is None:
                raise ApiError(400, "invalid", f"No graph revision {data['graph_revision']} among your teams' graphs.",
                               fields={"graph_revision": ["Not found among your teams' graphs."]})
        else:
            candidates = revisions.filter(graph_id=data["graph"])
            if data.get("revision"):
                candidates = candidates.filter(number=data["revision"])
            revision = candidates.order_by("-number").first()
            if revision is None:
                field = "revision" if data.get("revision") and revisions.filter(graph_id=data["graph"]).exists() else "graph"
                raise ApiError(400, "invalid", f"No such {field} among your teams' graphs.",
                               fields={field: ["Not found among your teams' graphs."]})
        dataset = scope_to_user_teams(Dataset.objects.all(), user=request.user).filter(pk=data["dataset"]).first()
        if dataset is None:
            raise ApiError(400, "invalid", f"No dataset {data['dataset']} among your teams' datasets.",
                           fields={"dataset": ["Not found among your teams' datasets."]})
        team = self.team_for_write(data.get("team", revision.graph.team_id))
        for name, owner in (("graph", revision.graph.team_id), ("dataset", dataset.team_id)):
            if owner != team.pk:
                raise ApiError(400, "invalid", f"The {name} belongs to another team than the run.",
                               fields={name: [f"Belongs to another team than team {team.pk}."]})
        run = services.run_create(
            user=request.user, team=team, graph_revision=revision, dataset=dataset,
            config=data.get("config"), transforms=data.get("transforms"), split=data.get("split"),
        )
        run = self.get_queryset().get(pk=run.pk)
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel: a queued run at once, a running one within one training step (202)."""
        run = services.run_cancel(run=self.get_object(), user=request.user)
        code = status.HTTP_200_OK if run.is_finished else status.HTTP_202_ACCEPTED
        return Response(RunSerializer(self.get_queryset().get(pk=run.pk)).data, status=code)

    @action(detail=True, methods=["get"])
    def metrics(self, request: Request, pk: str | None = None) -> Response:
        """Stored series: `?keys=a,b` to choose, `?max_points=N` to downsample each one."""
        run = self.get_object()
        keys = [k for k in request.query_params.get("keys", "").split(",") if k.strip()]
        max_points = request.query_params.get("max_points")
        limit: int | None = None
        if max_points not in (None, ""):
            try:
                limit = int(max_points)
            except ValueError:
                limit = 0
            if limit < 2:
                raise ApiError(400, "invalid", "max_points must be an integer of at least 2.",
                               fields={"max_points": ["An integer of at least 2."]})
        series = run_metric_series(run=run, keys=keys or None, max_points=limit)
        return Response({"run": run.pk, "last_seq": run.event_seq, "series": series})

    @action(detail=True, methods=["get"])
    def checkpoints(self, request: Request, pk: str | None = None) -> Response:
        """The run's checkpoints, oldest first."""
        run = self.get_object()
        return Response(CheckpointSerializer(run.checkpoints.order_by("step"), many=True).data)

    @action(detail=True, methods=["get", "post"], serializer_class=ExplanationSerializer)
    def explanations(self, request: Request, pk: str | None = None) -> Response:
        """GET: the run's explanations; POST {index | input, method, target?, layer?}: queue one."""
        run = self.get_object()
        if request.method == "GET":
            page = self.paginate_queryset(run.explanations.all())
            return self.get_paginated_response(ExplanationSerializer(page, many=True).data)
        body = ExplanationCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        explanation = services.explanation_create(run=run, user=request.user, **body.validated_data)
        return Response(ExplanationSerializer(explanation).data, status=status.HTTP_202_ACCEPTED)

    @action(detail=True, methods=["get"], content_negotiation_class=_AnyFormat)
    def export(self, request: Request, pk: str | None = None) -> Any:
        """Download `?format=safetensors|python|onnx|config|zip` of a succeeded run."""
        run = self.get_object()
        fmt = request.query_params.get("format", "safetensors")
        if fmt not in EXPORT_FORMATS:
            raise ApiError(400, "invalid", f"Unknown format {fmt!r}; one of {', '.join(EXPORT_FORMATS)}.",
                           fields={"format": [f"One of {', '.join(EXPORT_FORMATS)}."]})
        if run.status != RunStatus.SUCCEEDED:
            raise ApiError(409, "run_not_trained", f"Run {run.pk} has not succeeded ({run.status}); there is nothing to export.")
        filename, suffix, content_type = EXPORT_FORMATS[fmt]
        folder = run_export_dir(run)
        if fmt == "zip":
            path = run_export_zip(run)
            if not path.is_file() and (folder / "export.json").is_file():
                from engine.export import zip_export

                zip_export(folder, dest=path)
        else:
            path = folder / filename
        if not path.is_file():
            if fmt == "onnx" and (folder / "export.json").is_file():
                from engine.export import read_export_manifest

                note = read_export_manifest(folder).get("onnx", {})
                if "errors" in note:
                    raise ApiError(409, "onnx_unavailable", f"This graph has no ONNX export: {note.get('note')}.",
                                   extra={"errors": note.get("errors", [])})
                # Idempotent: queued once while pending; the stream's `export` event says when it is done.
                services.run_export_request(run=run)
                raise ApiError(409, "export_pending", "The ONNX file is being made; try again in a few seconds.",
                               extra={"exports": run_exports(run)})
            raise ApiError(409, "export_missing", "This run's export is missing; ask an administrator.")
        response = FileResponse(path.open("rb"), as_attachment=True, filename=run_download_name(run, suffix),
                                content_type=content_type)
        return response


class ExplanationViewSet(TeamScopedMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Explanations of the user's teams' runs."""

    queryset = Explanation.objects.select_related("run")
    serializer_class = ExplanationSerializer
    team_lookup = "run__team"

    @action(detail=True, methods=["get"], content_negotiation_class=_AnyFormat)
    def image(self, request: Request, pk: str | None = None) -> Any:
        """The rendering as PNG (heat map over an image, bars over tabular features)."""
        explanation = self.get_object()
        path = Path(explanation.png_path) if explanation.png_path else None
        if explanation.status != ExplanationStatus.SUCCEEDED or path is None or not path.is_file():
            raise ApiError(409, "explanation_not_ready", f"Explanation {explanation.pk} is {explanation.status}; no image yet.")
        return FileResponse(path.open("rb"), content_type="image/png",
                            filename=f"explanation-{explanation.pk}.png")


@cache
def _config_schema() -> dict[str, Any]:
    from engine.train import TrainConfig

    return {"schema": TrainConfig.model_json_schema(), "defaults": TrainConfig().model_dump(mode="json")}


class ConfigSchemaView(APIView):
    """GET /api/runs/config-schema/: the engine's TrainConfig JSON Schema and its defaults."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        """{"schema": TrainConfig.model_json_schema(), "defaults": TrainConfig() as JSON}."""
        return Response(_config_schema())


class ExplanationMethodsView(APIView):
    """GET /api/explanations/methods/: the engine's explanation methods."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        """{"methods": engine.explain.METHODS} ({name, label, has_delta, needs_layer, help} each)."""
        from engine.explain import METHODS

        return Response({"methods": METHODS})
