"""REST API of runs: create, list, detail, update, cancel, metrics, checkpoints, explanations,
export, predictions, evaluations and samples of one run.

Views parse, call one selector or service, and serialise: what a new run refers to is
`selectors.run_create_refs`, a download is `inference.exports.run_export_download`. Domain errors
(webapp.errors) become the API's error body in webapp/api/errors.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.http import FileResponse, HttpResponse
from django.utils.decorators import method_decorator
from django.views.decorators.http import condition
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from webapp.accounts.models import Role
from webapp.accounts.selectors import token_team_id
from webapp.api.authentication import reads_only
from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin
from webapp.api.parsers import LimitedJSONParser
from webapp.api.prefer import prefers_async
from webapp.api.renderers import FileFormatNegotiation
from webapp.api.serializers import (
    ID_MAX,
    IdField,
    NameField,
    StrictSerializer,
    TrainingSettingHints,
    name_problem,
    require_known_fields,
)
from webapp.jobs.api import JobSerializer
from webapp.metrics.selectors import run_metric_series, runs_summaries

from ..inference.evaluation import run_evaluation, run_evaluation_create, run_evaluation_request
from ..inference.explanations import explanation_create, run_explanations
from ..inference.exports import (
    EXPORT_FORMATS,
    run_checkpoint_export,
    run_export_checkpoint,
    run_export_download,
)
from ..inference.predict import run_predict, run_sample, run_sample_rows
from ..models import Checkpoint, Run, RunStatus
from ..scheduling.queue import run_queue_position
from ..selectors import (
    checkpoint_kind,
    export_job_annotations,
    revisions_params,
    run_checkpoints,
    run_create_refs,
    run_duration_s,
    run_exports,
    runs_best_checkpoints,
    runs_columns,
    runs_filter,
)
from ..services import run_cancel, run_create, run_reproduce, run_update
from ..stream.events import run_progress
from .detail import (
    RunHead,
    run_detail_document,
    run_detail_etag,
    run_detail_kept,
    run_head,
    run_head_export,
    run_head_exports,
)
from .explanations import ExplanationCreateSerializer, ExplanationSerializer
from .params import _query_int, metric_query
from .schema import (
    BEST_CHECKPOINT_SCHEMA,
    EVALUATION_PARAMETERS,
    EVALUATION_POST_PARAMETERS,
    EVALUATION_REQUEST,
    EXPORT_FORMAT_PARAMETER,
    METRICS_PARAMETERS,
    PNG_IMAGE,
    PREDICT_REQUEST,
    PROGRESS_SCHEMA,
    RUN_COLUMNS_PARAMETERS,
    RUN_EXPORTS_SCHEMA,
    RUN_LIST_PARAMETERS,
    RUN_SUMMARY_SCHEMA,
    CheckpointList,
    EvaluationAnswer,
    JsonObjectField,
    MetricsAnswer,
    MetricValuesField,
    PredictAnswer,
    RunColumnsAnswer,
    RunInitField,
    RunInitRequestField,
    RunOriginField,
    SampleAnswer,
    SampleRowsAnswer,
    download_responses,
    paginated,
)

QUEUE_SCHEMA = {
    "type": "object", "nullable": True,
    "description": "Where a queued run stands (null unless queued, and in lists): its position in the fair "
                   "order (1: next), how many runs go first, and why it waits (kueue: NETLOOM_RUNNER=kubernetes, the "
                   "detail is its Kueue Workload's message; the position is among its team's queued runs).",
    "properties": {
        "position": {"type": "integer", "minimum": 1},
        "ahead": {"type": "integer", "minimum": 0},
        "waiting_for": {"type": "string", "enum": ["team_limit", "no_fitting_worker", "behind", "kueue"]},
        "detail": {"type": "string"},
    },
    "required": ["position", "ahead", "waiting_for", "detail"],
}
GRAPH_PARAMS_SCHEMA = {
    "type": "object", "nullable": True, "additionalProperties": {},
    "description": 'The node parameters of the run\'s graph revision, {"nodes.fc1.out_features": 64}; '
                   "null unless the list was asked ?fields=graph_params.",
}
NEED_SCHEMA = {
    "type": "object",
    "description": "What the run needs from a worker: kind cpu | gpu | any (device auto), and devices (processes).",
    "properties": {"kind": {"type": "string", "enum": ["cpu", "gpu", "any"]}, "devices": {"type": "integer"}},
    "required": ["kind", "devices"],
}


DATASET_VERSION_REF_SCHEMA = {
    "type": "object", "nullable": True, "required": ["number", "digest"],
    "properties": {"number": {"type": "integer"}, "digest": {"type": "string"}},
}


@extend_schema_field({
    "type": "object", "description": "The Netloom that created the run: package version and git commit (when known).",
    "properties": {"netloom": {"type": "string"}, "commit": {"type": "string"}},
})
class CodeVersionField(serializers.JSONField):
    """{netloom, commit?} of the run (services.code_version)."""


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
    # JSON columns, described for the OpenAPI schema (webapp/runs/api/schema.py).
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
    graph_params = serializers.SerializerMethodField()
    dataset_version = serializers.SerializerMethodField(
        help_text="{number, digest} of the dataset version the run trains on (null: none, imported weights)."
    )
    code_version = CodeVersionField(read_only=True)

    class Meta:
        model = Run
        fields = [
            "id", "team", "name", "notes", "tags", "graph", "graph_name", "graph_revision", "revision",
            "dataset", "dataset_name", "dataset_version", "config", "recipe", "init", "origin", "status", "progress",
            "latest_metrics", "final_metrics", "summary", "best_checkpoint", "duration_s", "error",
            "cancel_requested", "attempts", "max_attempts", "worker", "device", "need", "priority", "queue",
            "graph_params", "reproduces", "code_version", "heartbeat_at", "created_by", "created_at", "started_at", "finished_at", "last_seq", "stream", "exports",
        ]
        read_only_fields = fields

    @extend_schema_field(DATASET_VERSION_REF_SCHEMA)
    def get_dataset_version(self, run: Run) -> dict[str, Any] | None:
        version = run.dataset_version
        return None if version is None else {"number": version.number, "digest": version.digest}

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

    @extend_schema_field(GRAPH_PARAMS_SCHEMA)
    def get_graph_params(self, run: Run) -> dict[str, Any] | None:
        """{"nodes.<id>.<param>": value} of the run's graph revision, in a list asked ?fields=graph_params."""
        found = self.context.get("graph_params")
        return None if found is None else found.get(run.graph_revision_id, {})

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
    dataset_version = serializers.IntegerField(
        required=False, default=None, allow_null=True, min_value=1, max_value=2**31 - 1,
        help_text="The version number of `dataset` to train on (default: its newest ready version).",
    )
    config = serializers.JSONField(required=False, default=dict)
    transforms = serializers.JSONField(required=False, default=None)
    split = serializers.JSONField(required=False, default=None)
    name = NameField(required=False, allow_blank=True, default="", max_length=200)
    notes = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=False)
    tags = serializers.JSONField(required=False, default=None, help_text="At most 20 distinct tags of 1..40 characters.")
    init = RunInitRequestField(
        required=False, default=None,
        help_text='Start from a checkpoint: {"run": id, "checkpoint": name, "mode": "finetune" | "resume"}.',
    )
    priority = serializers.JSONField(
        required=False, default=None, help_text="-10..10: the order among the team's own queued runs (higher first)."
    )

    def validate_tags(self, value: Any) -> Any:
        return _visible_tags(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """A run needs `graph_revision`, or `graph` (with `revision`, the latest by default)."""
        if not attrs.get("graph_revision") and not attrs.get("graph"):
            raise serializers.ValidationError({"graph": ["Give graph (and revision) or graph_revision."]})
        return attrs


def _visible_tags(value: Any) -> Any:
    """Tags are shown as names: none may hold a control or bidi character (the rest is the service's)."""
    if isinstance(value, list):
        for tag in value:
            problem = name_problem(tag) if isinstance(tag, str) else None
            if problem is not None:
                raise serializers.ValidationError(f"{tag!r}: {problem}")
    return value


class RunReproduceSerializer(StrictSerializer):
    """What POST /api/runs/<id>/reproduce/ takes (optional)."""

    deterministic = serializers.BooleanField(
        required=False, default=None, allow_null=True,
        help_text="Train with deterministic kernels only (config.deterministic); absent: as the original did.",
    )


class RunUpdateSerializer(StrictSerializer):
    """What PATCH /api/runs/<id>/ takes (each optional)."""

    name = NameField(required=False, allow_blank=True, max_length=200)
    notes = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    tags = serializers.JSONField(required=False, help_text="At most 20 distinct tags of 1..40 characters.")
    priority = serializers.JSONField(
        required=False, help_text="-10..10: the order among the team's own queued runs (higher first)."
    )

    def validate_tags(self, value: Any) -> Any:
        return _visible_tags(value)


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


# What GET /api/runs/ reads from its query string (schema.RUN_LIST_PARAMETERS, paging, `format`).
RUN_LIST_QUERY = frozenset({"status", "graph", "dataset", "team", "tag", "q", "sweep", "filter", "fields", "ordering",
                            "page", "page_size", "format"})


@extend_schema_view(list=extend_schema(parameters=RUN_LIST_PARAMETERS))
class RunViewSet(TeamScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Runs of the user's teams. Viewers read; editors create, rename, cancel and explain."""

    # The related rows give the serializer names and numbers only: their JSON columns (a graph's
    # whole spec, a dataset's column summary) stay in the database unless an action reads them.
    queryset = Run.objects.select_related("graph_revision__graph", "dataset", "dataset_version", "created_by").defer(
        "graph_revision__spec", "dataset__options", "dataset__recipe", "dataset__summary", "dataset__error",
        "dataset_version__options", "dataset_version__recipe", "dataset_version__summary", "dataset_version__error",
    )
    serializer_class = RunSerializer
    team_lookup = "team"
    write_role = Role.EDITOR

    def get_queryset(self) -> Any:
        """Scoped runs, optionally filtered (`?status=`, `?graph=`, `?dataset=`, `?filter=`...)."""
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
                           ordering=params.get("ordering") or None, expression=params.get("filter") or None)

    @method_decorator(condition(etag_func=lambda request, pk=None: _detail_etag(request, pk)))
    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        """One run of the user's teams: its state, progress, summaries, best checkpoint and downloads."""
        # A finished run's document is kept per version (webapp/runs/api/detail.py); its ETag lets a
        # poller that sends If-None-Match get a 304 without a body.
        head = _detail_head(request, pk)
        if head is None:
            return super().retrieve(request, pk=pk)  # ?team= scoping, a malformed or unknown id: the usual path
        return Response(run_detail_document(
            head=head, kept=request._run_kept, export=request._run_export, exports=request._run_exports,
            render=lambda: super(RunViewSet, self).retrieve(request, pk=pk).data,
        ))

    def list(self, request: Request) -> Response:
        """A page of runs; summaries and best checkpoints read once for the whole page."""
        unknown = sorted(set(request.query_params) - RUN_LIST_QUERY)
        if unknown:  # a misspelt filter must not answer with every run
            known = ", ".join(sorted(RUN_LIST_QUERY))
            raise ApiError(400, "invalid", f"Unknown parameter {', '.join(map(repr, unknown))}; the runs list takes "
                           f"{known}.", fields={name: [f"Not a parameter of the runs list ({known})."] for name in unknown})
        # The export jobs' states come with the page's own query (no query per run).
        page = self.paginate_queryset(self.get_queryset().annotate(**export_job_annotations()))
        ids = [run.pk for run in page]
        context = {**self.get_serializer_context(), "queue": False, "summaries": runs_summaries(run_ids=ids),
                   "best_checkpoints": runs_best_checkpoints(run_ids=ids)}
        if "graph_params" in request.query_params.get("fields", "").split(","):
            context["graph_params"] = revisions_params(revision_ids=[run.graph_revision_id for run in page])
        return self.get_paginated_response(RunSerializer(page, many=True, context=context).data)

    @extend_schema(parameters=RUN_COLUMNS_PARAMETERS, responses=RunColumnsAnswer)
    @action(detail=False, methods=["get"])
    def columns(self, request: Request) -> Response:
        """The metric names, config paths and graph parameters of the runs (`?team=`, `?filter=` and the
        list's other filters), for the table's column picker and the filter's completion."""
        return Response(runs_columns(runs=self.get_queryset()))

    @extend_schema(request=RunUpdateSerializer, responses=RunSerializer)
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        """Rename a run, change its notes or tags (editors)."""
        run = self.get_object()  # another team's run is a 404, whatever the body holds
        body = RunUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        run = run_update(run=run, actor=request.user, **body.validated_data)
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
        run = run_create(
            user=request.user, team=refs.team, graph_revision=refs.graph_revision, dataset=refs.dataset,
            config=data.get("config"), transforms=data.get("transforms"), split=data.get("split"),
            name=data.get("name") or "", notes=data.get("notes") or "", tags=data.get("tags"), init=data.get("init"),
            priority=data.get("priority"), dataset_version=data.get("dataset_version"),
        )
        run = self.get_queryset().get(pk=run.pk)
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=RunReproduceSerializer, responses={201: RunSerializer})
    @action(detail=True, methods=["post"])
    def reproduce(self, request: Request, pk: str | None = None) -> Response:
        """Queue a run repeating this one: same graph revision, data, config (seed) and initialisation
        (201 with the new run, whose `reproduces` is this run's id)."""
        run = self.get_object()  # editors of the run's team; another team's run is a 404
        body = RunReproduceSerializer(data=request.data if request.data else {})
        body.is_valid(raise_exception=True)
        created = run_reproduce(run=run, user=request.user, deterministic=body.validated_data.get("deterministic"))
        return Response(RunSerializer(self.get_queryset().get(pk=created.pk)).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: RunSerializer, 202: RunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel: a queued run at once, a running one within one training step (202)."""
        run = run_cancel(run=self.get_object(), user=request.user)
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
        responses=download_responses({f[2] for f in EXPORT_FORMATS.values()}),
    )
    @action(detail=True, methods=["get"], url_path=r"checkpoints/(?P<name>[A-Za-z0-9._-]+)/export",
            content_negotiation_class=FileFormatNegotiation)
    def checkpoint_export(self, request: Request, pk: str | None = None, name: str = "") -> Any:
        """Download one kept checkpoint's weights as an export (`?format=` as for the run's export)."""
        download = run_checkpoint_export(
            run=self.get_object(), name=name, fmt=request.query_params.get("format", "safetensors"),
            actor=request.user,
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
        explanation = explanation_create(run=run, user=request.user, **body.validated_data)
        return Response(ExplanationSerializer(explanation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        parameters=[EXPORT_FORMAT_PARAMETER],
        # One 200 per content type the formats are served as (safetensors/onnx, python, config, zip).
        responses=download_responses({f[2] for f in EXPORT_FORMATS.values()}),
    )
    @action(detail=True, methods=["get"], content_negotiation_class=FileFormatNegotiation)
    def export(self, request: Request, pk: str | None = None) -> Any:
        """Download `?format=safetensors|python|onnx|config|zip` of a succeeded run."""
        download = run_export_download(
            run=self.get_object(), fmt=request.query_params.get("format", "safetensors"), actor=request.user
        )
        return FileResponse(download.path.open("rb"), as_attachment=True, filename=download.filename,
                            content_type=download.content_type)

    @reads_only  # an inference is a read of the model: a read token may ask (its role still applies)
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
        if index is not None and (isinstance(index, bool) or not (str(index).isascii() and str(index).isdigit())
                                  or len(str(index)) > 19 or int(index) > ID_MAX):
            raise ApiError(400, "invalid_input", f"index must be a whole number from 0 to {ID_MAX}.",
                           fields={"index": [f"A whole number from 0 to {ID_MAX}."]})
        answer = run_predict(run=run, input=value, image=upload.read() if upload is not None else None,
                             index=int(index) if index is not None else None)
        return Response(answer)

    @extend_schema(methods=["GET"], parameters=EVALUATION_PARAMETERS, responses=EvaluationAnswer)
    @extend_schema(methods=["POST"], request=EVALUATION_REQUEST, parameters=EVALUATION_POST_PARAMETERS,
                   responses={200: EvaluationAnswer, 202: JobSerializer})
    @action(detail=True, methods=["get", "post"])
    def evaluation(self, request: Request, pk: str | None = None) -> Response:
        """GET: the stored evaluation (final model, or ?checkpoint=); POST {checkpoint?}: compute it
        now (200), or with `Prefer: respond-async` queue it as a job (202, the job; its result is
        the evaluation)."""
        run = self.get_object()
        if request.method == "GET":
            return Response(run_evaluation(run=run, checkpoint=request.query_params.get("checkpoint") or None))
        require_known_fields(request.data, ["checkpoint"])
        checkpoint = request.data.get("checkpoint") if hasattr(request.data, "get") else None
        if checkpoint is not None and not isinstance(checkpoint, str):
            raise ApiError(400, "invalid", "checkpoint must be a checkpoint's name.",
                           fields={"checkpoint": ["A checkpoint's name."]})
        if not prefers_async(request):
            return Response(run_evaluation_create(run=run, checkpoint=checkpoint or None))
        job = run_evaluation_request(run=run, checkpoint=checkpoint or None, user=request.user)
        return Response(JobSerializer(job).data, status=202, headers={
            "Location": reverse("job-detail", args=[job.pk]), "Preference-Applied": "respond-async",
        })

    @extend_schema(responses=SampleRowsAnswer)
    @action(detail=True, methods=["get"], url_path=r"samples/(?P<split>[A-Za-z0-9_-]+)")
    def samples(self, request: Request, pk: str | None = None, split: str = "test") -> Response:
        """Which rows of the user's own file (or archive entries) the split holds, in order."""
        return Response(run_sample_rows(run=self.get_object(), split=split))

    @extend_schema(operation_id="runs_sample_retrieve",
                   responses={(200, "application/json"): SampleAnswer, (200, "image/png"): PNG_IMAGE})
    @action(detail=True, methods=["get"], url_path=r"samples/(?P<split>[A-Za-z0-9_-]+)/(?P<index>[0-9]+)",
            content_negotiation_class=FileFormatNegotiation)
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
        head = None if request.query_params or run_id is None else run_head(
            run_id=run_id, user_id=request.user.pk, team_id=token_team_id(request.user))
        request._run_head = head
        request._run_kept = request._run_export = request._run_exports = None
        if head is not None and head.finished:  # an unfinished run is rendered whole, exports included
            request._run_kept = run_detail_kept(head)
            request._run_export = run_head_export(head, request._run_kept)
            request._run_exports = run_head_exports(head, request._run_export)
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


