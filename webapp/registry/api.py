"""REST API of the registry: /api/models/, their versions, downloads and aliases (with history)."""

from __future__ import annotations

from typing import Any

from django.db.models import Max, QuerySet
from django.http import FileResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.models import Role
from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin
from webapp.api.serializers import IdField, NameField, StrictSerializer, UserRefSerializer

from .models import ModelVersion, RegisteredModel
from .selectors import (
    model_aliases,
    model_endpoint_path,
    model_history,
    version_files,
    version_folder,
)
from .services import alias_drop, alias_set, model_create, version_create


def extend_schema_field_list(serializer: type[serializers.Serializer]) -> Any:
    """A SerializerMethodField answering a list of `serializer`."""
    return extend_schema_field(serializer(many=True))


DOWNLOADS = {  # ?format= -> (file, content type)
    "safetensors": ("model.safetensors", "application/octet-stream"),
    "python": ("model.py", "text/x-python"),
    "onnx": ("model.onnx", "application/octet-stream"),
    "config": ("config.json", "application/json"),
}


class ModelVersionSerializer(serializers.ModelSerializer):
    created_by = UserRefSerializer(read_only=True, allow_null=True)
    source = serializers.DictField(help_text="Where the weights came from: run, run_name, checkpoint (null: the "
                                   "run's final export), graph, graph_name, revision, dataset, dataset_name.")
    metrics = serializers.DictField(help_text="The metrics recorded with these weights.")
    files = serializers.SerializerMethodField()
    aliases = serializers.SerializerMethodField()

    class Meta:
        model = ModelVersion
        fields = ["number", "source", "metrics", "note", "files", "aliases", "created_by", "created_at"]
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
    actor = serializers.CharField(allow_null=True)
    note = serializers.CharField()
    at = serializers.DateTimeField()


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
    endpoint = serializers.SerializerMethodField(
        help_text="The absolute URL that serves the default alias (`production`) over the Open Inference "
                  "Protocol v2 (POST it `{inputs: [...]}`); null while no version is production.")

    class Meta(RegisteredModelSerializer.Meta):
        fields = [*RegisteredModelSerializer.Meta.fields, "versions", "history", "endpoint"]
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


class AliasSetSerializer(StrictSerializer):
    version = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
    note = serializers.CharField(required=False, allow_blank=True, max_length=500)


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
        return Response(RegisteredModelDetailSerializer(model).data, status=status.HTTP_201_CREATED)

    def _model(self, pk: Any) -> RegisteredModel:
        self.kwargs["pk"] = pk
        return self.get_object()  # another team's model is a 404; a viewer's write a 403

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
        """One file of the version: its weights, model.py, ONNX (where the export had it) or config."""
        version = self._version(self._model(pk), number)
        fmt = request.query_params.get("format", "safetensors")
        if fmt not in DOWNLOADS:
            raise ApiError(400, "invalid", f"Unknown format {fmt!r}; one of {', '.join(DOWNLOADS)}.",
                           fields={"format": [f"One of {', '.join(DOWNLOADS)}."]})
        name, content_type = DOWNLOADS[fmt]
        path = version_folder(model_id=version.model_id, number=version.number) / name
        if not path.is_file():
            raise ApiError(404, "not_found", f"Version {version.number} has no {name} (its export had none).")
        filename = f"{version.model.name}-v{version.number}-{name}"
        return FileResponse(path.open("rb"), as_attachment=True, filename=filename, content_type=content_type)

    @extend_schema(request=AliasSetSerializer, responses=RegisteredModelDetailSerializer)
    def alias_put(self, request: Request, pk: Any = None, alias: str = "") -> Response:
        """Point the alias at a version (the move is recorded); `production` needs a team admin."""
        model = self._model(pk)
        body = AliasSetSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        alias_set(model=model, alias=alias, number=body.validated_data["version"],
                  note=body.validated_data.get("note", ""), actor=request.user)
        return Response(RegisteredModelDetailSerializer(model).data)

    @extend_schema(request=None, responses={204: None},
                   parameters=[OpenApiParameter("note", str, description="Why it was dropped (history).")])
    def alias_delete(self, request: Request, pk: Any = None, alias: str = "") -> Response:
        model = self._model(pk)
        alias_drop(model=model, alias=alias, note=request.query_params.get("note", "")[:500], actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
