"""REST API of the registry: /api/models/, their versions, downloads and aliases (with history)."""

from __future__ import annotations

from typing import Any

from django.db.models import Max, QuerySet
from django.http import FileResponse, HttpResponse, JsonResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema, extend_schema_field
from rest_framework import generics, mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.models import Role
from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin
from webapp.api.serializers import IdField, NameField, StrictSerializer, UserRefSerializer
from webapp.datasets.models import Dataset, DatasetVersion
from webapp.jobs.api import JobSerializer
from webapp.runs.models import Run

from . import lineage
from .models import AliasApproval, ApprovalStatus, ModelVersion, RegisteredModel
from .selectors import (
    approval_row,
    model_aliases,
    model_approvals,
    model_endpoint_path,
    model_history,
    version_files,
    version_folder,
)
from .services import (
    FORMAT_NAMES,
    alias_approve,
    alias_drop,
    alias_reject,
    alias_set,
    model_create,
    version_create,
    version_formats_request,
    version_inference_service,
)


def extend_schema_field_list(serializer: type[serializers.Serializer]) -> Any:
    """A SerializerMethodField answering a list of `serializer`."""
    return extend_schema_field(serializer(many=True))


DOWNLOADS = {  # ?format= -> (file, content type)
    "safetensors": ("model.safetensors", "application/octet-stream"),
    "python": ("model.py", "text/x-python"),
    "onnx": ("model.onnx", "application/octet-stream"),
    "config": ("config.json", "application/json"),
    "pt2": ("model.pt2", "application/octet-stream"),
    "int8": ("model.int8.pt2", "application/octet-stream"),
    "aoti": ("model.aoti.pt2", "application/octet-stream"),
}


class LatencySerializer(serializers.Serializer):
    b1 = serializers.FloatField(help_text="Median milliseconds of one call with one row.")
    b64 = serializers.FloatField(help_text="Median milliseconds of one call with 64 rows.")


class FormatFiguresSerializer(serializers.Serializer):
    file = serializers.CharField(required=False)
    size = serializers.IntegerField(required=False, help_text="Bytes.")
    metric = serializers.CharField(required=False, help_text="accuracy, or rmse for a regression.")
    value = serializers.FloatField(required=False, help_text="The metric of this format on the test split.")
    fp32_value = serializers.FloatField(required=False)
    accuracy_delta = serializers.FloatField(required=False, help_text="value - fp32_value.")
    max_abs_diff = serializers.FloatField(required=False, help_text="Largest output difference against fp32.")
    rows = serializers.IntegerField(required=False)
    latency_ms = LatencySerializer(required=False)
    fp32_latency_ms = LatencySerializer(required=False)
    threads = serializers.IntegerField(required=False)
    torch = serializers.CharField(required=False)
    built_at = serializers.CharField(required=False)
    error = serializers.CharField(required=False, help_text="Why this format could not be built for the graph.")


class ModelVersionSerializer(serializers.ModelSerializer):
    created_by = UserRefSerializer(read_only=True, allow_null=True)
    source = serializers.DictField(help_text="Where the weights came from: run, run_name, checkpoint (null: the "
                                   "run's final export), graph, graph_name, revision, dataset, dataset_name.")
    metrics = serializers.DictField(help_text="The metrics recorded with these weights.")
    formats = serializers.DictField(
        child=FormatFiguresSerializer(),
        help_text="Formats built for other runtimes (POST .../formats/): pt2, int8, aoti, each with its file, "
                  "size, accuracy delta on the test split and CPU latency against fp32, or an error.")
    files = serializers.SerializerMethodField()
    aliases = serializers.SerializerMethodField()

    class Meta:
        model = ModelVersion
        fields = ["number", "source", "metrics", "note", "formats", "files", "aliases", "created_by", "created_at"]
        read_only_fields = fields

    def get_files(self, version: ModelVersion) -> list[str]:
        return version_files(version)

    def get_aliases(self, version: ModelVersion) -> list[str]:
        names = self.context.get("aliases")
        if names is None:
            names = model_aliases(model=version.model)
        return sorted(name for name, number in names.items() if number == version.number)


class AliasMoveSerializer(serializers.Serializer):
    alias = serializers.CharField()
    from_version = serializers.IntegerField(allow_null=True)
    to_version = serializers.IntegerField(allow_null=True, help_text="Null: the alias was dropped.")
    actor = serializers.CharField(allow_null=True, help_text="Who moved it (or asked for the move, when approved).")
    approved_by = serializers.CharField(allow_null=True, help_text="The second admin who approved the move.")
    note = serializers.CharField()
    at = serializers.DateTimeField()


class AliasApprovalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    alias = serializers.CharField()
    version = serializers.IntegerField(help_text="The version the alias would name.")
    from_version = serializers.IntegerField(allow_null=True, help_text="What the alias named when asked.")
    current_version = serializers.IntegerField(allow_null=True, help_text="What the alias names now.")
    note = serializers.CharField()
    status = serializers.ChoiceField(choices=ApprovalStatus.choices)
    stale = serializers.BooleanField(help_text="Pending, but the alias moved since: approving it is refused.")
    requested_by = serializers.CharField(allow_null=True)
    decided_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)


class ApprovalAnswerSerializer(serializers.Serializer):
    approval = AliasApprovalSerializer()


class RegisteredModelSerializer(serializers.ModelSerializer):
    created_by = UserRefSerializer(read_only=True, allow_null=True)
    latest_version = serializers.SerializerMethodField()
    aliases = serializers.SerializerMethodField()

    class Meta:
        model = RegisteredModel
        fields = ["id", "team", "name", "description", "latest_version", "aliases", "created_by", "created_at",
                  "updated_at"]
        read_only_fields = fields

    def get_latest_version(self, model: RegisteredModel) -> int | None:
        if hasattr(model, "latest_number"):  # the list's annotation
            return model.latest_number
        return model.versions.aggregate(n=Max("number"))["n"]

    def get_aliases(self, model: RegisteredModel) -> dict[str, int]:
        return model_aliases(model=model)


class RegisteredModelDetailSerializer(RegisteredModelSerializer):
    versions = serializers.SerializerMethodField()
    history = serializers.SerializerMethodField()
    production_needs_approval = serializers.BooleanField(
        source="team.production_needs_approval", read_only=True,
        help_text="The team asks a second admin to approve moves of production.")

    endpoint = serializers.SerializerMethodField(
        help_text="The absolute URL that serves the default alias (`production`) over the Open Inference "
                  "Protocol v2 (POST it `{inputs: [...]}`); null while no version is production.")

    class Meta(RegisteredModelSerializer.Meta):
        fields = [*RegisteredModelSerializer.Meta.fields, "versions", "history", "production_needs_approval",
                  "endpoint"]
        read_only_fields = fields

    def get_endpoint(self, model: RegisteredModel) -> str | None:
        from django.conf import settings

        path = model_endpoint_path(model=model, default_alias=settings.SERVING_DEFAULT_ALIAS)
        request = self.context.get("request")
        if path is None:
            return None
        return request.build_absolute_uri(path) if request is not None else path

    @extend_schema_field_list(ModelVersionSerializer)
    def get_versions(self, model: RegisteredModel) -> list[dict[str, Any]]:
        aliases = model_aliases(model=model)
        versions = model.versions.select_related("created_by").order_by("-number")
        return ModelVersionSerializer(versions, many=True, context={"aliases": aliases}).data

    @extend_schema_field_list(AliasMoveSerializer)
    def get_history(self, model: RegisteredModel) -> list[dict[str, Any]]:
        return AliasMoveSerializer(model_history(model=model), many=True).data


class ModelWriteSerializer(StrictSerializer):
    team = IdField(help_text="The team the model belongs to.")
    name = NameField(max_length=100)
    description = serializers.CharField(required=False, allow_blank=True, max_length=5000)


class ModelVersionCreateSerializer(StrictSerializer):
    run = IdField(help_text="A run of the model's team.")
    checkpoint = serializers.CharField(required=False, allow_blank=True, max_length=100,
                                       help_text="A kept checkpoint (best, epoch-0003); empty: the run's final export.")
    note = serializers.CharField(required=False, allow_blank=True, max_length=500)


class InferenceServiceSerializer(serializers.Serializer):
    """The KServe InferenceService of a version (its spec: docs/subsystems/registry.md)."""

    apiVersion = serializers.CharField(help_text="serving.kserve.io/v1beta1")  # noqa: N815 - Kubernetes' name
    kind = serializers.CharField(help_text="InferenceService")
    metadata = serializers.DictField(help_text="name (a DNS-1123 label), labels, annotations (netloom.io/served-name).")
    spec = serializers.DictField(help_text="predictor: one custom container running the standalone model server "
                                 "on the version's folder (STORAGE_URI pvc://...), resources, runAsNonRoot.")


class FormatsRequestSerializer(StrictSerializer):
    formats = serializers.ListField(child=serializers.CharField(max_length=20), min_length=1, max_length=3,
                                    help_text=f"Which to build: {', '.join(FORMAT_NAMES)}.")


class AliasSetSerializer(StrictSerializer):
    version = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
    note = serializers.CharField(required=False, allow_blank=True, max_length=500)


class LineageNodeSerializer(serializers.Serializer):
    """One node of a lineage: `data` holds what its kind knows (webapp/registry/lineage.py)."""

    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=["dataset", "run", "checkpoint", "model_version", "alias"])
    label = serializers.CharField()
    data = serializers.DictField()


class LineageEdgeSerializer(serializers.Serializer):
    source = serializers.CharField()
    target = serializers.CharField()
    kind = serializers.CharField(help_text="trained_on, checkpoint, finetune, resume, reproduced_by, registered, alias")


class LineageSerializer(serializers.Serializer):
    """Where a run, model version or dataset version came from and what came of it; `truncated`: a
    bound cut it."""

    root = serializers.CharField()
    nodes = LineageNodeSerializer(many=True)
    edges = LineageEdgeSerializer(many=True)
    truncated = serializers.BooleanField()


DEPTH_PARAMETER = OpenApiParameter(
    "depth", {"type": "integer", "minimum": 1, "maximum": lineage.DEPTH_MAX}, description=f"Hops between runs each way, 1..{lineage.DEPTH_MAX} (default {lineage.DEPTH_DEFAULT}).")


def _depth(request: Request) -> int:
    try:
        return lineage.lineage_depth(request.query_params.get("depth"))
    except ValueError as exc:
        raise ApiError(400, "invalid", str(exc), fields={"depth": [str(exc)]}) from None


class RegisteredModelViewSet(TeamScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                             viewsets.GenericViewSet):
    """A team's models: members read; editors register models and versions and move aliases
    (`production` needs a team admin)."""

    queryset = RegisteredModel.objects.select_related("created_by")
    serializer_class = RegisteredModelSerializer
    write_role = Role.EDITOR

    def get_queryset(self) -> QuerySet:
        # An aggregate's GROUP BY drops Meta.ordering: the page's order is said again.
        return super().get_queryset().annotate(latest_number=Max("versions__number")).order_by("name", "id")

    def get_serializer_class(self) -> Any:
        return RegisteredModelDetailSerializer if self.action == "retrieve" else RegisteredModelSerializer

    @extend_schema(request=ModelWriteSerializer, responses={201: RegisteredModelDetailSerializer})
    def create(self, request: Request) -> Response:
        body = ModelWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        team = self.team_for_write(data.pop("team", None))
        model = model_create(team=team, created_by=request.user, **data)
        return Response(RegisteredModelDetailSerializer(model, context={"request": request}).data,
                        status=status.HTTP_201_CREATED)

    def _model(self, pk: Any) -> RegisteredModel:
        self.kwargs["pk"] = pk
        return self.get_object()  # another team's model is a 404; a viewer's write a 403

    @extend_schema(operation_id="models_versions_lineage_retrieve", parameters=[DEPTH_PARAMETER],
                   responses=LineageSerializer)
    def version_lineage(self, request: Request, pk: Any = None, number: Any = None) -> Response:
        """Where the version came from (its run, checkpoint and their upstream) and its aliases."""
        version = self._version(self._model(pk), number)
        return Response(lineage.version_lineage(version=version, depth=_depth(request)))

    def _version(self, model: RegisteredModel, number: Any) -> ModelVersion:
        version = model.versions.select_related("model", "created_by").filter(number=int(number)).first()
        if version is None:
            raise ApiError(404, "not_found", f"Model {model.name!r} has no version {number}.")
        return version

    @extend_schema(request=ModelVersionCreateSerializer, responses={201: ModelVersionSerializer})
    def versions_create(self, request: Request, pk: Any = None) -> Response:
        """Register a run's final export, or one of its kept checkpoints, as the next version."""
        from webapp.runs.models import Run

        model = self._model(pk)
        body = ModelVersionCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        run = Run.objects.select_related("graph_revision__graph", "dataset").filter(
            pk=data["run"], team_id=model.team_id).first()
        if run is None:
            raise ApiError(400, "invalid", f"No run {data['run']} in team {model.team.name}.",
                           fields={"run": [f"No run {data['run']} in this model's team."]})
        version = version_create(model=model, run=run, checkpoint=data.get("checkpoint") or None,
                                 note=data.get("note", ""), created_by=request.user)
        return Response(ModelVersionSerializer(version).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=ModelVersionSerializer(many=True))
    def versions_list(self, request: Request, pk: Any = None) -> Response:
        model = self._model(pk)
        versions = model.versions.select_related("created_by").order_by("-number")
        return Response(ModelVersionSerializer(versions, many=True, context={"aliases": model_aliases(model=model)}).data)

    @extend_schema(responses=ModelVersionSerializer)
    def version_retrieve(self, request: Request, pk: Any = None, number: Any = None) -> Response:
        return Response(ModelVersionSerializer(self._version(self._model(pk), number)).data)

    @extend_schema(parameters=[OpenApiParameter("format", str, enum=list(DOWNLOADS))],
                   responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    def version_download(self, request: Request, pk: Any = None, number: Any = None) -> Any:
        """One file of the version: its weights, model.py, ONNX (where the export had it), config, or a
        format built for other runtimes (pt2, int8, aoti)."""
        version = self._version(self._model(pk), number)
        fmt = request.query_params.get("format", "safetensors")
        if fmt not in DOWNLOADS:
            raise ApiError(400, "invalid", f"Unknown format {fmt!r}; one of {', '.join(DOWNLOADS)}.",
                           fields={"format": [f"One of {', '.join(DOWNLOADS)}."]})
        name, content_type = DOWNLOADS[fmt]
        path = version_folder(model_id=version.model_id, number=version.number) / name
        if not path.is_file():
            built = fmt in FORMAT_NAMES
            raise ApiError(404, "not_found", f"Version {version.number} has no {name} "
                           + (f'(build it: POST {{"formats": ["{fmt}"]}} to .../formats/).' if built
                              else "(its export had none)."))
        filename = f"{version.model.name}-v{version.number}-{name}"
        return FileResponse(path.open("rb"), as_attachment=True, filename=filename, content_type=content_type)

    @extend_schema(request=FormatsRequestSerializer, responses={202: JobSerializer})
    def version_formats(self, request: Request, pk: Any = None, number: Any = None) -> Response:
        """Build formats for other runtimes (.pt2, int8, AOTInductor) as a job: 202 and the job; the
        figures land in the version's `formats` and the files download with ?format=."""
        model = self._model(pk)
        version = self._version(model, number)
        body = FormatsRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        job = version_formats_request(version=version, formats=body.validated_data["formats"], user=request.user)
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED,
                        headers={"Location": f"/api/jobs/{job.pk}/"})

    @extend_schema(parameters=[OpenApiParameter("format", str, enum=["json", "yaml"])],
                   responses={(200, "application/json"): InferenceServiceSerializer,
                              (200, "application/yaml"): OpenApiTypes.STR})
    def version_kserve(self, request: Request, pk: Any = None, number: Any = None) -> Any:
        """The KServe InferenceService (serving.kserve.io/v1beta1) serving this version on a cluster."""
        version = self._version(self._model(pk), number)
        manifest = version_inference_service(version)
        fmt = request.query_params.get("format", "json")
        if fmt == "yaml":
            import yaml

            return HttpResponse(yaml.safe_dump(manifest, sort_keys=False), content_type="application/yaml")
        if fmt != "json":
            raise ApiError(400, "invalid", f"Unknown format {fmt!r}; json or yaml.",
                           fields={"format": ["json or yaml."]})
        return JsonResponse(manifest)

    @extend_schema(request=AliasSetSerializer,
                   responses={200: RegisteredModelDetailSerializer, 202: ApprovalAnswerSerializer})
    def alias_put(self, request: Request, pk: Any = None, alias: str = "") -> Response:
        """Point the alias at a version (the move is recorded); `production` needs a team admin.

        When the team asks for approval of production moves, moving `production` files a request
        instead: 202 with the pending `approval`, which another admin approves.
        """
        model = self._model(pk)
        body = AliasSetSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        done = alias_set(model=model, alias=alias, number=body.validated_data["version"],
                         note=body.validated_data.get("note", ""), actor=request.user)
        if isinstance(done, AliasApproval):
            return Response({"approval": approval_row(approval=done)}, status=status.HTTP_202_ACCEPTED)
        return Response(RegisteredModelDetailSerializer(model, context={"request": request}).data)

    @extend_schema(responses=AliasApprovalSerializer(many=True), parameters=[
        OpenApiParameter("status", str, enum=list(ApprovalStatus.values), description="Only requests in this state.")])
    def approvals_list(self, request: Request, pk: Any = None) -> Response:
        """The model's requests to move production, newest first (each says whether it is stale)."""
        model = self._model(pk)
        wanted = request.query_params.get("status") or None
        if wanted is not None and wanted not in ApprovalStatus.values:
            raise ApiError(400, "invalid", f"Unknown status {wanted!r}; one of {', '.join(ApprovalStatus.values)}.",
                           fields={"status": [f"One of {', '.join(ApprovalStatus.values)}."]})
        return Response(AliasApprovalSerializer(model_approvals(model=model, status=wanted), many=True).data)

    @extend_schema(request=None, responses=ApprovalAnswerSerializer)
    def approval_approve(self, request: Request, pk: Any = None, approval: int = 0) -> Response:
        """A second admin approves: the alias moves now, and the history names both people."""
        done = alias_approve(model=self._model(pk), approval_id=int(approval), actor=request.user)
        return Response({"approval": approval_row(approval=done)})

    @extend_schema(request=None, responses=ApprovalAnswerSerializer)
    def approval_reject(self, request: Request, pk: Any = None, approval: int = 0) -> Response:
        """An admin rejects the request (or the one who asked withdraws it); nothing moves."""
        done = alias_reject(model=self._model(pk), approval_id=int(approval), actor=request.user)
        return Response({"approval": approval_row(approval=done)})

    @extend_schema(request=None, responses={204: None},
                   parameters=[OpenApiParameter("note", str, description="Why it was dropped (history).")])
    def alias_delete(self, request: Request, pk: Any = None, alias: str = "") -> Response:
        model = self._model(pk)
        alias_drop(model=model, alias=alias, note=request.query_params.get("note", "")[:500], actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class RunLineageView(TeamScopedMixin, generics.GenericAPIView):
    """GET /api/runs/<id>/lineage/: the run's lineage (members of its team; a 404 for others)."""

    queryset = Run.objects.only("id", "team_id")
    team_lookup = "team"

    @extend_schema(operation_id="runs_lineage_retrieve", parameters=[DEPTH_PARAMETER],
                   responses=LineageSerializer)
    def get(self, request: Request, pk: int) -> Response:
        run = self.get_object()
        return Response(lineage.run_lineage(run_id=run.pk, team_id=run.team_id, depth=_depth(request)))


class DatasetVersionLineageView(TeamScopedMixin, generics.GenericAPIView):
    """GET /api/datasets/<id>/versions/<n>/lineage/: which runs and models used this data (members of
    the dataset's team; a 404 for others and for a version the dataset lacks)."""

    queryset = Dataset.objects.only("id", "team_id", "name", "kind")
    team_lookup = "team"

    @extend_schema(operation_id="datasets_versions_lineage_retrieve", parameters=[DEPTH_PARAMETER],
                   responses=LineageSerializer)
    def get(self, request: Request, pk: int, number: int) -> Response:
        dataset = self.get_object()
        depth = _depth(request)
        version = DatasetVersion.objects.filter(dataset=dataset, number=number).only("id", "number", "digest").first()
        if version is None:
            raise ApiError(404, "not_found", f"Dataset {dataset.pk} has no version {number}.")
        version.dataset = dataset
        return Response(lineage.dataset_version_lineage(version=version, team_id=dataset.team_id, depth=depth))
