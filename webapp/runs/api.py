"""REST API of runs: create, list, detail, cancel, metrics, checkpoints, explanations, export;
the engine's training-config schema and explanation methods for the browser's forms.

Views parse, call one selector or service, and serialise: what a new run refers to is
`selectors.run_create_refs`, a download is `services.run_export_download`. Domain errors
(webapp.errors) become the API's error body in webapp/api/errors.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.http import FileResponse, HttpResponse
from django.utils.decorators import method_decorator
from django.views.decorators.http import condition
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import generics, mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.accounts.models import Role
from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin
from webapp.api.parsers import LimitedJSONParser
from webapp.api.serializers import (
    ID_MAX,
    IdField,
    StrictSerializer,
    TrainingSettingHints,
    require_known_fields,
)

from . import services
from .checks import init_plan_read
from .detail import RunHead, run_detail_document, run_detail_etag, run_head, run_head_exports
from .evaluation import run_evaluation, run_evaluation_create
from .events import run_progress
from .models import Checkpoint, Explanation, ExplanationStatus, Run, RunStatus
from .predict import run_predict, run_sample, run_sample_rows
from .schema import (
    BEST_CHECKPOINT_SCHEMA,
    COMPARE_PARAMETERS,
    EVALUATION_PARAMETERS,
    EVALUATION_REQUEST,
    EXPORT_FORMAT_PARAMETER,
    METRICS_PARAMETERS,
    PNG_IMAGE,
    PREDICT_REQUEST,
    PROGRESS_SCHEMA,
    RUN_EXPORTS_SCHEMA,
    RUN_LIST_PARAMETERS,
    RUN_SUMMARY_SCHEMA,
    CheckpointList,
    CompareAnswer,
    ConfigSchemaAnswer,
    EvaluationAnswer,
    ExplanationMethodsAnswer,
    ExplanationResultField,
    ExplanationSampleField,
    InitPlanAnswer,
    JsonObjectField,
    MetricsAnswer,
    MetricValuesField,
    PredictAnswer,
    RunInitField,
    RunInitRequestField,
    RunOriginField,
    SampleAnswer,
    SampleRowsAnswer,
    download_responses,
    paginated,
)
from .selectors import (
    checkpoint_kind,
    explanation_image,
    run_checkpoints,
    run_config_schema,
    run_create_refs,
    run_duration_s,
    run_explanations,
    run_export_checkpoint,
    run_exports,
    run_graph_revision_ref,
    run_metric_series,
    run_queue_position,
    runs_best_checkpoints,
    runs_compare_rows,
    runs_config_diff,
    runs_filter,
    runs_graph_diff,
    runs_metric_series,
    runs_summaries,
    runs_visible_to,
    workers_for_user,
)

QUEUE_SCHEMA = {
    "type": "object", "nullable": True,
    "description": "Where a queued run stands (null unless queued, and in lists): its position in the fair "
                   "order (1: next), how many runs go first, and why it waits.",
    "properties": {
        "position": {"type": "integer", "minimum": 1},
        "ahead": {"type": "integer", "minimum": 0},
        "waiting_for": {"type": "string", "enum": ["team_limit", "no_fitting_worker", "behind"]},
        "detail": {"type": "string"},
    },
    "required": ["position", "ahead", "waiting_for", "detail"],
}
NEED_SCHEMA = {
    "type": "object",
    "description": "What the run needs from a worker: kind cpu | gpu | any (device auto), and devices (processes).",
    "properties": {"kind": {"type": "string", "enum": ["cpu", "gpu", "any"]}, "devices": {"type": "integer"}},
    "required": ["kind", "devices"],
}


class RunSerializer(serializers.ModelSerializer):
    """A run as the API shows it."""

    graph = serializers.IntegerField(source="graph_revision.graph_id", read_only=True)
    graph_name = serializers.CharField(source="graph_revision.graph.name", read_only=True)
    revision = serializers.IntegerField(source="graph_revision.number", read_only=True)
    # null for a run of imported weights (no dataset).
    dataset_name = serializers.CharField(source="dataset.name", read_only=True, default=None, allow_null=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None, allow_null=True)
    progress = serializers.SerializerMethodField()
    last_seq = serializers.IntegerField(source="event_seq", read_only=True)
    stream = serializers.SerializerMethodField()
    exports = serializers.SerializerMethodField()
    # JSON columns, described for the OpenAPI schema (webapp/runs/schema.py).
    config = JsonObjectField(read_only=True)
    recipe = JsonObjectField(read_only=True)
    latest_metrics = MetricValuesField(read_only=True)
    final_metrics = JsonObjectField(read_only=True)
    tags = serializers.ListField(child=serializers.CharField(), read_only=True)
    init = RunInitField(read_only=True)
    origin = RunOriginField(read_only=True)
    duration_s = serializers.SerializerMethodField()
    best_checkpoint = serializers.SerializerMethodField()
    summary = serializers.SerializerMethodField()
    need = serializers.SerializerMethodField()
    queue = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = [
            "id", "team", "name", "notes", "tags", "graph", "graph_name", "graph_revision", "revision",
            "dataset", "dataset_name", "config", "recipe", "init", "origin", "status", "progress",
            "latest_metrics", "final_metrics", "summary", "best_checkpoint", "duration_s", "error",
            "cancel_requested", "attempts", "max_attempts", "worker", "device", "need", "priority", "queue",
            "heartbeat_at", "created_by", "created_at", "started_at", "finished_at", "last_seq", "stream", "exports",
        ]
        read_only_fields = fields

    @extend_schema_field(NEED_SCHEMA)
    def get_need(self, run: Run) -> dict[str, Any]:
        """{kind, devices}: which workers fit it (webapp/runs/devices.py::run_need)."""
        return {"kind": run.need_kind, "devices": run.need_devices}

    @extend_schema_field(QUEUE_SCHEMA)
    def get_queue(self, run: Run) -> dict[str, Any] | None:
        """A queued run's position and why it waits (selectors.run_queue_position); null in lists."""
        if not self.context.get("queue", True):
            return None
        return run_queue_position(run=run)

    def _page(self, name: str, run: Run) -> Any:
        """The per-page read `name` (summaries, best checkpoints): given by the list view in one
        query for the page, or read for this one run."""
        found = self.context.get(name)
        if found is None or run.pk not in found:
            reader = runs_summaries if name == "summaries" else runs_best_checkpoints
            found = reader(run_ids=[run.pk])
        return found.get(run.pk)

    def get_duration_s(self, run: Run) -> float | None:
        """Seconds of training (to now while running); null before it started."""
        return run_duration_s(run)

    @extend_schema_field(BEST_CHECKPOINT_SCHEMA)
    def get_best_checkpoint(self, run: Run) -> dict[str, Any] | None:
        """The `best` checkpoint {name, step, epoch, metrics}: the weights of the default export."""
        return self._page("best_checkpoints", run)

    @extend_schema_field(RUN_SUMMARY_SCHEMA)
    def get_summary(self, run: Run) -> dict[str, Any]:
        """{"final": {key: value}, "best": {key: {value, step, epoch, mode}}} over the stored series."""
        return self._page("summaries", run) or {"final": {}, "best": {}}

    @extend_schema_field(PROGRESS_SCHEMA)
    def get_progress(self, run: Run) -> dict[str, Any]:
        """Epoch, step, total steps, fraction done and the estimated seconds left."""
        return run_progress(run)

    @extend_schema_field(RUN_EXPORTS_SCHEMA)
    def get_exports(self, run: Run) -> dict[str, Any]:
        """Which downloads exist: {status, safetensors, python, config, zip, onnx, note} (selectors.run_exports)."""
        return run_exports(run)

    def get_stream(self, run: Run) -> str:
        """Path of the run's WebSocket stream."""
        return f"/ws/runs/{run.pk}/"


class RunCreateSerializer(TrainingSettingHints, StrictSerializer):
    """What POST /api/runs/ takes: a graph revision, a dataset and a (partial) training config."""

    team = IdField(required=False)
    graph = IdField(required=False)
    revision = IdField(required=False)
    graph_revision = IdField(required=False)
    dataset = IdField()
    config = serializers.JSONField(required=False, default=dict)
    transforms = serializers.JSONField(required=False, default=None)
    split = serializers.JSONField(required=False, default=None)
    name = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    notes = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=False)
    tags = serializers.JSONField(required=False, default=None, help_text="At most 20 distinct tags of 1..40 characters.")
    init = RunInitRequestField(
        required=False, default=None,
        help_text='Start from a checkpoint: {"run": id, "checkpoint": name, "mode": "finetune" | "resume"}.',
    )
    priority = serializers.JSONField(
        required=False, default=None, help_text="-10..10: the order among the team's own queued runs (higher first)."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """A run needs `graph_revision`, or `graph` (with `revision`, the latest by default)."""
        if not attrs.get("graph_revision") and not attrs.get("graph"):
            raise serializers.ValidationError({"graph": ["Give graph (and revision) or graph_revision."]})
        return attrs


class RunUpdateSerializer(StrictSerializer):
    """What PATCH /api/runs/<id>/ takes (each optional)."""

    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    notes = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    tags = serializers.JSONField(required=False, help_text="At most 20 distinct tags of 1..40 characters.")
    priority = serializers.JSONField(
        required=False, help_text="-10..10: the order among the team's own queued runs (higher first)."
    )


class CheckpointSerializer(serializers.ModelSerializer):
    """A checkpoint of a run (its folder stays on the server)."""

    available = serializers.SerializerMethodField()
    kind = serializers.SerializerMethodField()
    default = serializers.SerializerMethodField()
    metrics = MetricValuesField(read_only=True)

    class Meta:
        model = Checkpoint
        fields = ["name", "kind", "step", "epoch", "metrics", "available", "default", "created_at"]

    def get_available(self, checkpoint: Checkpoint) -> bool:
        """False once training pruned it (only the last few are kept)."""
        return (Path(checkpoint.path) / "state.json").is_file()

    def get_kind(self, checkpoint: Checkpoint) -> str:
        """"best", "epoch" or "cancelled" (written when the run was cancelled)."""
        return checkpoint_kind(checkpoint.name)

    def get_default(self, checkpoint: Checkpoint) -> bool:
        """True for the checkpoint whose weights the run's default export holds."""
        return checkpoint.name == self.context.get("default")


class InitPlanRequestSerializer(StrictSerializer):
    """What POST /api/runs/init-plan/ takes: the graph to start and the checkpoint to start it from."""

    graph = IdField(required=False)
    revision = IdField(required=False)
    graph_revision = IdField(required=False)
    from_run = IdField()
    checkpoint = serializers.CharField()
    mode = serializers.ChoiceField(choices=["finetune", "resume"], default="finetune")
    epochs = serializers.IntegerField(required=False, min_value=1, help_text="The new run's epochs (resume checks them).")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """`graph_revision`, or `graph` (with `revision`, the latest by default)."""
        if not attrs.get("graph_revision") and not attrs.get("graph"):
            raise serializers.ValidationError({"graph": ["Give graph (and revision) or graph_revision."]})
        return attrs


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

    index = serializers.IntegerField(required=False, min_value=0, allow_null=True, default=None)
    input = serializers.JSONField(
        required=False, default=None,
        help_text="Numbers of the feature shape, or a row as in the CSV {column: raw value}.",
    )
    image = serializers.CharField(
        required=False, allow_null=True, default=None,
        help_text="An uploaded image as a data: URL (or base64), instead of index or input.",
    )
    method = serializers.CharField(default="integrated_gradients")
    target = serializers.IntegerField(required=False, min_value=0, allow_null=True, default=None)
    layer = serializers.CharField(required=False, allow_blank=True, allow_null=True, default=None)
    checkpoint = serializers.CharField(
        required=False, allow_null=True, default=None,
        help_text="Explain a kept checkpoint's weights (its name) instead of the trained model.",
    )


class _AnyFormat(DefaultContentNegotiation):
    """Downloads use `?format=` for the file format, not for choosing a DRF renderer."""

    def select_renderer(self, request: Request, renderers: list[Any], format_suffix: str | None = None) -> tuple[Any, str]:
        """Always the first renderer (JSON, for error bodies)."""
        return renderers[0], renderers[0].media_type


@extend_schema_view(list=extend_schema(parameters=RUN_LIST_PARAMETERS))
class RunViewSet(TeamScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Runs of the user's teams. Viewers read; editors create, rename, cancel and explain."""

    # The related rows give the serializer names and numbers only: their JSON columns (a graph's
    # whole spec, a dataset's column summary) stay in the database unless an action reads them.
    queryset = Run.objects.select_related("graph_revision__graph", "dataset", "created_by").defer(
        "graph_revision__spec", "dataset__options", "dataset__recipe", "dataset__summary", "dataset__error"
    )
    serializer_class = RunSerializer
    team_lookup = "team"
    write_role = Role.EDITOR

    def get_queryset(self) -> Any:
        """Scoped runs, optionally filtered by `?status=`, `?graph=`, `?dataset=`."""
        params = self.request.query_params
        ids: dict[str, int | None] = {}
        for name in ("graph", "dataset"):
            try:
                ids[name] = int(params[name]) if params.get(name) else None
            except ValueError:
                ids[name] = 0
            if ids[name] is not None and not 1 <= ids[name] <= ID_MAX:  # type: ignore[operator]
                raise ApiError(400, "invalid", f"{name} must be an id.", fields={name: ["Must be an integer id."]})
        statuses = params["status"].split(",") if params.get("status") else None
        sweep = _query_int(self.request, "sweep", least=1)
        return runs_filter(super().get_queryset(), statuses=statuses, graph_id=ids["graph"], dataset_id=ids["dataset"],
                           tag=params.get("tag") or None, text=params.get("q") or None, sweep_id=sweep,
                           ordering=params.get("ordering") or None)

    @method_decorator(condition(etag_func=lambda request, pk=None: _detail_etag(request, pk)))
    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        """One run of the user's teams: its state, progress, summaries, best checkpoint and downloads."""
        # A finished run's document is kept per version (webapp/runs/detail.py); its ETag lets a
        # poller that sends If-None-Match get a 304 without a body.
        head = _detail_head(request, pk)
        if head is None:
            return super().retrieve(request, pk=pk)  # ?team= scoping, a malformed or unknown id: the usual path
        return Response(run_detail_document(
            head=head, exports=request._run_exports,
            render=lambda: super(RunViewSet, self).retrieve(request, pk=pk).data,
        ))

    def list(self, request: Request) -> Response:
        """A page of runs; summaries and best checkpoints read once for the whole page."""
        page = self.paginate_queryset(self.get_queryset())
        ids = [run.pk for run in page]
        context = {**self.get_serializer_context(), "queue": False, "summaries": runs_summaries(run_ids=ids),
                   "best_checkpoints": runs_best_checkpoints(run_ids=ids)}
        return self.get_paginated_response(RunSerializer(page, many=True, context=context).data)

    @extend_schema(request=RunUpdateSerializer, responses=RunSerializer)
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        """Rename a run, change its notes or tags (editors)."""
        run = self.get_object()  # another team's run is a 404, whatever the body holds
        body = RunUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        run = services.run_update(run=run, **body.validated_data)
        return Response(RunSerializer(self.get_queryset().get(pk=run.pk)).data)

    @extend_schema(request=RunCreateSerializer, responses={201: RunSerializer})
    def create(self, request: Request) -> Response:
        """Validate everything, then queue the run (201 with the run)."""
        body = RunCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        refs = run_create_refs(
            user=request.user, dataset_id=data["dataset"], graph_revision_id=data.get("graph_revision"),
            graph_id=data.get("graph"), revision=data.get("revision"), team_id=data.get("team"),
            write_role=self.write_role,
        )
        run = services.run_create(
            user=request.user, team=refs.team, graph_revision=refs.graph_revision, dataset=refs.dataset,
            config=data.get("config"), transforms=data.get("transforms"), split=data.get("split"),
            name=data.get("name") or "", notes=data.get("notes") or "", tags=data.get("tags"), init=data.get("init"),
            priority=data.get("priority"),
        )
        run = self.get_queryset().get(pk=run.pk)
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: RunSerializer, 202: RunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel: a queued run at once, a running one within one training step (202)."""
        run = services.run_cancel(run=self.get_object(), user=request.user)
        code = status.HTTP_200_OK if run.is_finished else status.HTTP_202_ACCEPTED
        return Response(RunSerializer(self.get_queryset().get(pk=run.pk)).data, status=code)

    @extend_schema(parameters=METRICS_PARAMETERS, responses=MetricsAnswer)
    @action(detail=True, methods=["get"])
    def metrics(self, request: Request, pk: str | None = None) -> Response:
        """Stored series: `?keys=a,b` to choose, `?max_points=N` to downsample each one,
        `?from_step=&to_step=` for a window (every point when it holds at most max_points)."""
        run = self.get_object()
        series = run_metric_series(run=run, **metric_query(request))
        return Response({"run": run.pk, "last_seq": run.event_seq, "series": series})

    @extend_schema(responses=CheckpointList)
    @action(detail=True, methods=["get"])
    def checkpoints(self, request: Request, pk: str | None = None) -> Response:
        """The run's checkpoints, oldest first, with their kind, metrics and which one the export holds."""
        run = self.get_object()
        rows = list(run_checkpoints(run=run))
        default = None
        if run.status == RunStatus.SUCCEEDED:
            # The export names its checkpoint; an export of the final weights is the last epoch's.
            default = run_export_checkpoint(run=run) or next(
                (c.name for c in reversed(rows) if checkpoint_kind(c.name) == "epoch" and c.step == run.step), None
            )
        return Response(CheckpointSerializer(rows, many=True, context={"default": default}).data)

    @extend_schema(
        parameters=[EXPORT_FORMAT_PARAMETER],
        responses=download_responses({f[2] for f in services.EXPORT_FORMATS.values()}),
    )
    @action(detail=True, methods=["get"], url_path=r"checkpoints/(?P<name>[A-Za-z0-9._-]+)/export",
            content_negotiation_class=_AnyFormat)
    def checkpoint_export(self, request: Request, pk: str | None = None, name: str = "") -> Any:
        """Download one kept checkpoint's weights as an export (`?format=` as for the run's export)."""
        download = services.run_checkpoint_export(
            run=self.get_object(), name=name, fmt=request.query_params.get("format", "safetensors")
        )
        return FileResponse(download.path.open("rb"), as_attachment=True, filename=download.filename,
                            content_type=download.content_type)

    @extend_schema(methods=["GET"], responses=paginated(ExplanationSerializer, "PaginatedRunExplanationList"))
    @extend_schema(methods=["POST"], request=ExplanationCreateSerializer, responses={202: ExplanationSerializer})
    @action(detail=True, methods=["get", "post"], serializer_class=ExplanationSerializer)
    def explanations(self, request: Request, pk: str | None = None) -> Response:
        """GET: the run's explanations; POST {index | input, method, target?, layer?}: queue one."""
        run = self.get_object()
        if request.method == "GET":
            page = self.paginate_queryset(run_explanations(run=run))
            return self.get_paginated_response(ExplanationSerializer(page, many=True).data)
        body = ExplanationCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        explanation = services.explanation_create(run=run, user=request.user, **body.validated_data)
        return Response(ExplanationSerializer(explanation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        parameters=[EXPORT_FORMAT_PARAMETER],
        # One 200 per content type the formats are served as (safetensors/onnx, python, config, zip).
        responses=download_responses({f[2] for f in services.EXPORT_FORMATS.values()}),
    )
    @action(detail=True, methods=["get"], content_negotiation_class=_AnyFormat)
    def export(self, request: Request, pk: str | None = None) -> Any:
        """Download `?format=safetensors|python|onnx|config|zip` of a succeeded run."""
        download = services.run_export_download(
            run=self.get_object(), fmt=request.query_params.get("format", "safetensors")
        )
        return FileResponse(download.path.open("rb"), as_attachment=True, filename=download.filename,
                            content_type=download.content_type)

    @extend_schema(request=PREDICT_REQUEST, responses=PredictAnswer)
    @action(detail=True, methods=["post"], parser_classes=[LimitedJSONParser, MultiPartParser])
    def predict(self, request: Request, pk: str | None = None) -> Response:
        """The trained model's answer for raw input: {input: row | numbers}, {index}, or a multipart image."""
        run = self.get_object()  # editors (as for explanations): it runs the model on the server
        upload = request.FILES.get("image")
        body = request.data
        require_known_fields(body, ["input", "index", "image"])
        value = body.get("input") if hasattr(body, "get") else None
        if upload is not None and isinstance(value, str):  # multipart fields are text
            value = None
        index = body.get("index") if hasattr(body, "get") else None
        if index is not None and (isinstance(index, bool) or not (str(index).isascii() and str(index).isdigit())):
            raise ApiError(400, "invalid_input", "index must be a whole number >= 0.",
                           fields={"index": ["A whole number >= 0."]})
        answer = run_predict(run=run, input=value, image=upload.read() if upload is not None else None,
                             index=int(index) if index is not None else None)
        return Response(answer)

    @extend_schema(methods=["GET"], parameters=EVALUATION_PARAMETERS, responses=EvaluationAnswer)
    @extend_schema(methods=["POST"], request=EVALUATION_REQUEST, responses=EvaluationAnswer)
    @action(detail=True, methods=["get", "post"])
    def evaluation(self, request: Request, pk: str | None = None) -> Response:
        """GET: the stored evaluation (final model, or ?checkpoint=); POST {checkpoint?}: compute it now."""
        run = self.get_object()
        if request.method == "GET":
            return Response(run_evaluation(run=run, checkpoint=request.query_params.get("checkpoint") or None))
        require_known_fields(request.data, ["checkpoint"])
        checkpoint = request.data.get("checkpoint") if hasattr(request.data, "get") else None
        if checkpoint is not None and not isinstance(checkpoint, str):
            raise ApiError(400, "invalid", "checkpoint must be a checkpoint's name.",
                           fields={"checkpoint": ["A checkpoint's name."]})
        return Response(run_evaluation_create(run=run, checkpoint=checkpoint or None))

    @extend_schema(responses=SampleRowsAnswer)
    @action(detail=True, methods=["get"], url_path=r"samples/(?P<split>[A-Za-z0-9_-]+)")
    def samples(self, request: Request, pk: str | None = None, split: str = "test") -> Response:
        """Which rows of the user's own file (or archive entries) the split holds, in order."""
        return Response(run_sample_rows(run=self.get_object(), split=split))

    @extend_schema(operation_id="runs_sample_retrieve",
                   responses={(200, "application/json"): SampleAnswer, (200, "image/png"): PNG_IMAGE})
    @action(detail=True, methods=["get"], url_path=r"samples/(?P<split>[A-Za-z0-9_-]+)/(?P<index>[0-9]+)",
            content_negotiation_class=_AnyFormat)
    def sample(self, request: Request, pk: str | None = None, split: str = "test", index: str = "0") -> Any:
        """One sample as uploaded: its raw column values (JSON), or a PNG for images."""
        sample = run_sample(run=self.get_object(), split=split, index=int(index))
        if sample["kind"] == "image":
            return HttpResponse(sample["png"], content_type="image/png")
        return Response(sample)


def _detail_head(request: Request, pk: str | None) -> RunHead | None:
    """The run's head for a bare detail request of a run the user may read (read once a request)."""
    if not hasattr(request, "_run_head"):
        run_id = detail_run_id(pk)
        head = None if request.query_params or run_id is None else run_head(run_id=run_id, user_id=request.user.pk)
        request._run_head = head
        request._run_exports = run_head_exports(head) if head is not None else None
    return request._run_head


def _detail_etag(request: Request, pk: str | None) -> str | None:
    head = _detail_head(request, pk)
    return run_detail_etag(head, request._run_exports) if head is not None else None


def detail_run_id(pk: str | None) -> int | None:
    """The run id of a detail URL's `pk`, None when it can name no row.

    isascii: str.isdigit() is true of "²", which int() refuses (a 500 before this check had it).
    """
    if pk is None or not (pk.isascii() and pk.isdigit()):
        return None
    run_id = int(pk)
    return run_id if 1 <= run_id <= ID_MAX else None


class ExplanationViewSet(TeamScopedMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Explanations of the user's teams' runs."""

    queryset = Explanation.objects.select_related("run")
    serializer_class = ExplanationSerializer
    team_lookup = "run__team"

    @extend_schema(responses={(200, "image/png"): PNG_IMAGE})
    @action(detail=True, methods=["get"], content_negotiation_class=_AnyFormat)
    def image(self, request: Request, pk: str | None = None) -> Any:
        """The rendering as PNG (heat map over an image, bars over tabular features)."""
        explanation = self.get_object()
        return FileResponse(explanation_image(explanation=explanation).open("rb"), content_type="image/png",
                            filename=f"explanation-{explanation.pk}.png")


def _query_int(request: Request, name: str, *, least: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    try:
        number = int(raw)
    except ValueError:
        number = None
    if number is None or (least is not None and number < least) or abs(number) > ID_MAX:
        what = "an integer" if least is None else f"an integer of at least {least}"
        raise ApiError(400, "invalid", f"{name} must be {what}.", fields={name: [f"{what[0].upper()}{what[1:]}."]})
    return number


def metric_query(request: Request) -> dict[str, Any]:
    """`?keys=a,b&max_points=N&from_step=&to_step=` as run_metric_series' keyword arguments."""
    keys = [k for k in request.query_params.get("keys", "").split(",") if k.strip()]
    return {
        "keys": keys or None,
        "max_points": _query_int(request, "max_points", least=2),
        "from_step": _query_int(request, "from_step"),
        "to_step": _query_int(request, "to_step"),
    }


# A comparison is of 2 to 20 runs: more than a chart can tell apart is a mistake, not a request.
COMPARE_MIN_RUNS = 2
COMPARE_MAX_RUNS = 20


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


class RunCompareView(APIView):
    """GET /api/runs/compare/?ids=1,2&keys=a,b&max_points=N: many runs' series in one request."""

    @extend_schema(parameters=COMPARE_PARAMETERS, responses=CompareAnswer)
    def get(self, request: Request) -> Response:
        """Series, who each run is, the config fields that differ and the graph changes, in the
        order of `ids`; 404 if one is not yours, 400 naming `ids` unless there are 2 to 20."""
        try:
            ids = list(dict.fromkeys(int(i) for i in request.query_params.get("ids", "").split(",") if i.strip()))
        except ValueError:
            ids = []
        wanted = f"{COMPARE_MIN_RUNS} to {COMPARE_MAX_RUNS} comma-separated run ids"
        if not ids or len(ids) > COMPARE_MAX_RUNS or not all(1 <= i <= ID_MAX for i in ids):
            raise ApiError(400, "invalid", f"ids must be {wanted}.", fields={"ids": [f"{wanted[0].upper()}{wanted[1:]}."]})
        query = metric_query(request)
        runs_of_user = runs_visible_to(user=request.user).select_related(
            "graph_revision__graph", "dataset", "created_by"
        )
        found = {run.pk: run for run in runs_of_user.filter(pk__in=ids)}
        missing = [i for i in ids if i not in found]
        if missing:
            raise ApiError(404, "not_found", f"No run {missing[0]} among your teams' runs.")
        if len(ids) < COMPARE_MIN_RUNS:
            raise ApiError(400, "invalid", f"ids must be {wanted}; a comparison needs at least two runs.",
                           fields={"ids": [f"{wanted[0].upper()}{wanted[1:]}."]})
        runs = [found[i] for i in ids]
        series = runs_metric_series(runs=runs, **query)
        return Response({
            # Each entry keeps the series answer of before ({run, last_seq, series}) beside who the run is.
            "runs": [{**row, **one} for row, one in zip(runs_compare_rows(runs=runs), series, strict=True)],
            "config_diff": runs_config_diff(runs=runs),
            "graph_diff": runs_graph_diff(runs=runs),
        })


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
                                       epochs=data.get("epochs")))


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


class WeightsImportSerializer(StrictSerializer):
    """What POST /api/graphs/<id>/revisions/<n>/weights/ takes (multipart)."""

    file = serializers.FileField(help_text="A .safetensors file whose keys and shapes are the revision's "
                                 "state dict (`python -m engine import ... --weights-out`). Never a pickle.")
    name = serializers.CharField(required=False, allow_blank=True, max_length=200,
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

        from .imports import max_weights_bytes

        request.upload_handlers = [LimitedUploadHandler(request, max_bytes=max_weights_bytes())]
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(request={"multipart/form-data": WeightsImportSerializer}, responses={201: RunSerializer})
    def post(self, request: Request, graph_pk: int, number: int) -> Response:
        from .imports import import_revision_for_user, run_import_create

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
