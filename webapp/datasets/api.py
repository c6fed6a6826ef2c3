"""REST API for datasets: built-ins, uploads, list/detail/delete, rename or new CSV options, previews."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.db import transaction
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import exceptions, generics, mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin
from webapp.api.parsers import json_value_problem
from webapp.api.serializers import IdField, NameField, StrictSerializer, UserRefSerializer

from . import services
from .models import Dataset, DatasetKind, DatasetStatus, DatasetVersion
from .previews import dataset_preview
from .schema import DATASET_SUMMARY_SCHEMA, BuiltinList, DataErrorField, DatasetPreview, VersionDiff
from .versions import dataset_latest_version, dataset_version_delete, dataset_version_upload

VERSION_REF_SCHEMA = {
    "type": "object", "nullable": True, "required": ["number", "digest"],
    "properties": {"number": {"type": "integer"}, "digest": {"type": "string"}},
}


class DatasetSerializer(serializers.ModelSerializer):
    created_by = UserRefSerializer(read_only=True, allow_null=True)
    recipe = serializers.SerializerMethodField()
    summary = serializers.SerializerMethodField()
    trainable = serializers.SerializerMethodField(
        help_text="Ready and nothing left to choose: a run may use it."
    )
    needs = serializers.SerializerMethodField(
        help_text='What the user must choose first ("target" for a CSV without one), or null.'
    )
    error = DataErrorField(read_only=True)
    latest_version = serializers.SerializerMethodField(
        help_text="{number, digest} of the newest ready version (what a new run trains on), or null."
    )

    class Meta:
        model = Dataset
        fields = [
            "id", "team", "name", "kind", "status", "trainable", "needs", "options", "recipe",
            "summary", "error", "original_filename", "size", "progress", "latest_version", "created_by",
            "created_at", "updated_at",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(VERSION_REF_SCHEMA)
    def get_latest_version(self, dataset: Dataset) -> dict[str, Any] | None:
        if hasattr(dataset, "latest_number"):  # annotated by the list's own query (selectors.with_latest_version)
            if dataset.latest_number is None:
                return None
            return {"number": dataset.latest_number, "digest": dataset.latest_digest}
        version = dataset_latest_version(dataset=dataset)
        return None if version is None else {"number": version.number, "digest": version.digest}

    def get_trainable(self, dataset: Dataset) -> bool:
        return services.dataset_is_trainable(dataset=dataset)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_needs(self, dataset: Dataset) -> str | None:
        return services.dataset_needs(dataset=dataset)

    @extend_schema_field(DATASET_SUMMARY_SCHEMA)
    def get_summary(self, dataset: Dataset) -> dict[str, Any]:
        if self.context.get("brief"):
            # Lists stay small: image previews are base64 PNGs; the detail has them.
            return {k: v for k, v in dataset.summary.items() if k != "preview"}
        return dataset.summary

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_recipe(self, dataset: Dataset) -> dict[str, Any]:
        # The server's file path is nobody's business; runs get it from the selector.
        return {k: v for k, v in dataset.recipe.items() if k not in ("path", "table")}


class DatasetVersionSerializer(serializers.ModelSerializer):
    """One version of a dataset: its bytes' digest, size, summary and options, who made it."""

    created_by = UserRefSerializer(read_only=True, allow_null=True)
    summary = serializers.SerializerMethodField()
    error = DataErrorField(read_only=True)
    runs = serializers.SerializerMethodField(help_text="How many runs train on this version.")

    class Meta:
        model = DatasetVersion
        fields = [
            "number", "status", "digest", "size", "original_filename", "options", "summary", "error",
            "progress", "runs", "created_by", "created_at",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(DATASET_SUMMARY_SCHEMA)
    def get_summary(self, version: DatasetVersion) -> dict[str, Any]:
        if self.context.get("brief"):
            return {k: v for k, v in version.summary.items() if k != "preview"}
        return version.summary

    def get_runs(self, version: DatasetVersion) -> int:
        found = getattr(version, "run_count", None)
        return found if found is not None else version.runs.count()


class DatasetVersionUploadSerializer(StrictSerializer):
    """Multipart form of a new version: the file and, optionally, options (JSON text; default the previous version's)."""

    file = serializers.FileField()
    options = serializers.CharField(required=False, allow_blank=True, default=None, allow_null=True)

    def validate_options(self, value: str | None) -> dict[str, Any] | None:
        if value in (None, ""):
            return None
        return DatasetUploadSerializer().validate_options(value)


class BuiltinNameField(serializers.CharField):
    """The name of a built-in dataset: the schema lists them (BuiltinNameFieldSchema)."""


class BuiltinNameFieldSchema(OpenApiSerializerFieldExtension):
    """The enum of built-in names, read from the engine when the schema is made (not at import)."""

    target_class = BuiltinNameField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        from engine.data import BUILTIN_DATASETS

        return {"type": "string", "enum": list(BUILTIN_DATASETS)}


class DatasetCreateSerializer(StrictSerializer):
    team = IdField()
    name = NameField(max_length=200, required=False, allow_blank=True, default="")
    builtin = BuiltinNameField(max_length=100)
    options = serializers.DictField(required=False, default=dict)


class DatasetUpdateSerializer(StrictSerializer):
    """PATCH body: a new name, new CSV options (merged; null removes one), or both."""

    name = NameField(max_length=200, required=False)
    options = serializers.DictField(
        required=False,
        help_text="CSV only: target, features, categorical, task, delimiter, encoding, missing "
        "(per column a strategy: mean, median, most_frequent, constant {value}, drop_row, "
        "category, fail; indicator). The stored file is checked again; refused (409) while runs "
        "use the dataset.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError({"name": ["Give a new name or new options."]})
        return attrs


def upload_option_names() -> set[str]:
    """The options an upload takes (a CSV's or an image archive's): the engine's source fields
    but those the server fills in."""
    from engine.data.recipe import CsvSource, ImagesSource

    return {name for source in (CsvSource, ImagesSource) for name in source.model_fields} - {"kind", "path", "table"}


class DatasetUploadSerializer(StrictSerializer):
    """Multipart form of an upload; `options` is a JSON object as text."""

    team = IdField()
    kind = serializers.ChoiceField(
        choices=[k for k in DatasetKind.values if k != DatasetKind.BUILTIN]
    )
    name = NameField(max_length=200, required=False, allow_blank=True, default="")
    options = serializers.CharField(required=False, allow_blank=True, default="{}")
    file = serializers.FileField()

    def hint_for(self, key: str) -> str | None:
        """An upload option sent as its own form field is named as one."""
        if key in upload_option_names():
            return f'An upload option: send it inside the "options" field (-F \'options={{"{key}": ...}}\').'
        return None

    def validate_options(self, value: str) -> dict[str, Any]:
        try:
            options = json.loads(value or "{}")
        except json.JSONDecodeError as exc:
            raise serializers.ValidationError(
                f"Not JSON: {exc.msg} at column {exc.colno}."
            ) from None
        if not isinstance(options, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        problem = json_value_problem(options)  # what no column can store (webapp/api/parsers.py)
        if problem is not None:
            path, message = problem
            raise serializers.ValidationError(f"{path}: {message}" if path else message)
        return options


def _error_field(engine_field: str | None) -> str:
    """The request field a DataError belongs to ("source.target" -> "options.target")."""
    if not engine_field:
        return "file"
    name = engine_field.removeprefix("source.")
    return "kind" if name == "kind" else f"options.{name}"


def _failed(dataset: Dataset) -> ApiError:
    error = dataset.error or {}
    message = error.get("message") or "The dataset could not be read."
    return ApiError(
        status.HTTP_400_BAD_REQUEST,
        "invalid_dataset",
        message,
        fields={_error_field(error.get("field")): [message]},
        extra={"detail": error, "dataset": DatasetSerializer(dataset).data},
    )


class DatasetViewSet(
    TeamScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Datasets of the user's teams."""

    queryset = Dataset.objects.select_related("created_by").all()
    serializer_class = DatasetSerializer

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "brief": self.action == "list"}

    def get_queryset(self):
        queryset = super().get_queryset()
        wanted = self.request.query_params.get("status")
        if wanted:
            queryset = queryset.filter(status=wanted)
        from .selectors import with_latest_version

        return with_latest_version(queryset)

    @extend_schema(request=DatasetCreateSerializer, responses={201: DatasetSerializer})
    def create(self, request: Request) -> Response:
        payload = DatasetCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        team = self.team_for_write(payload.validated_data["team"])
        dataset = services.dataset_builtin_create(
            team=team,
            name=payload.validated_data["name"],
            builtin=payload.validated_data["builtin"],
            options=payload.validated_data["options"],
            created_by=request.user,
        )
        return Response(DatasetSerializer(dataset).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=DatasetUpdateSerializer, responses=DatasetSerializer)
    def partial_update(self, request: Request, pk: int) -> Response:
        dataset = self.get_object()
        payload = DatasetUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        if "name" in data and not data["name"].strip():
            raise exceptions.ValidationError({"name": ["A dataset needs a name."]})
        # Options first: they are the part that can fail, and a failure must change nothing.
        with transaction.atomic():
            if "options" in data:
                # A failed check is DatasetCheckFailed: 400 with the engine's `detail` (webapp/api/errors.py).
                services.dataset_options_update(dataset=dataset, options=data["options"], actor=request.user)
            if "name" in data:
                services.dataset_rename(dataset=dataset, name=data["name"], actor=request.user)
        return Response(DatasetSerializer(dataset).data)

    def perform_destroy(self, instance: Dataset) -> None:
        services.dataset_delete(dataset=instance, actor=self.request.user)

    @extend_schema(methods=["GET"], responses=DatasetVersionSerializer(many=True))
    @extend_schema(methods=["POST"], request={"multipart/form-data": DatasetVersionUploadSerializer},
                   responses={201: DatasetVersionSerializer, 202: DatasetVersionSerializer})
    @action(detail=True, methods=["get", "post"], parser_classes=[MultiPartParser])
    def versions(self, request: Request, pk: int) -> Response:
        """GET: the dataset's versions, oldest first. POST: upload version n+1 (editors); checked
        as an upload is: 201 ready | 202 processing | 400 invalid_dataset | 409 duplicate_version."""
        from django.db.models import Count

        from .selectors import dataset_versions

        dataset = self.get_object()
        if request.method == "GET":
            rows = dataset_versions(dataset=dataset).annotate(run_count=Count("runs"))
            return Response(DatasetVersionSerializer(rows, many=True, context={"brief": True}).data)
        payload = DatasetVersionUploadSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        upload = payload.validated_data["file"]
        if not hasattr(upload, "temporary_file_path"):
            raise exceptions.ValidationError({"file": ["The upload was not stored; try again."]})
        version = dataset_version_upload(
            dataset=dataset, upload_path=Path(upload.temporary_file_path()),
            original_filename=upload.name or "upload", options=payload.validated_data["options"],
            created_by=request.user,
        )
        if version.status == DatasetStatus.FAILED:
            error = version.error or {}
            message = error.get("message") or "The version could not be read."
            raise ApiError(status.HTTP_400_BAD_REQUEST, "invalid_dataset", message,
                           fields={_error_field(error.get("field")): [message]},
                           extra={"detail": error, "version": DatasetVersionSerializer(version).data})
        code = status.HTTP_201_CREATED if version.status == DatasetStatus.READY else status.HTTP_202_ACCEPTED
        return Response(DatasetVersionSerializer(version).data, status=code)

    def _version(self, dataset: Dataset, number: int) -> DatasetVersion:
        from .selectors import dataset_version_get

        version = dataset_version_get(dataset=dataset, number=number)
        if version is None:
            raise ApiError(status.HTTP_404_NOT_FOUND, "not_found", f"Dataset {dataset.pk} has no version {number}.")
        return version

    @extend_schema(
        parameters=[
            OpenApiParameter("from", {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}, required=True,
                             description="The version compared from."),
            OpenApiParameter("to", {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}, required=True,
                             description="The version compared to."),
            OpenApiParameter("key", str, required=False,
                             description="A CSV column that identifies a row (else rows are matched by content)."),
        ],
        responses=VersionDiff,
    )
    def versions_diff(self, request: Request, pk: int) -> Response:
        """What changed between two versions: rows added/removed/changed, columns added/removed/
        retyped, per-column statistics and class balance before/after (examples capped, counts exact)."""
        from engine.data import DataError

        from .selectors import dataset_versions_diff

        dataset = self.get_object()
        numbers: dict[str, int] = {}
        for name in ("from", "to"):
            raw = request.query_params.get(name, "")
            if not raw.isdigit():
                raise ApiError(400, "invalid", f"Give ?{name}= a version number.", fields={name: ["A version number."]})
            numbers[name] = int(raw)
        versions = {name: self._version(dataset, number) for name, number in numbers.items()}
        for name, version in versions.items():
            if version.status != DatasetStatus.READY:
                raise ApiError(409, "not_ready", f"Version {version.number} is {version.status}.", fields={name: [version.status]})
        key = request.query_params.get("key") or None
        try:
            answer = dataset_versions_diff(dataset=dataset, before=versions["from"], after=versions["to"], key=key)
        except DataError as exc:
            raise ApiError(400, "invalid", str(exc), fields={"key" if exc.field == "key" else "from": [str(exc)]}) from None
        return Response(answer)

    @extend_schema(methods=["GET"], responses=DatasetVersionSerializer)
    @extend_schema(methods=["DELETE"], responses={204: None})
    def version(self, request: Request, pk: int, number: int) -> Response:
        """GET one version; DELETE it (editors): 409 `in_use` naming the runs that train on it."""
        dataset = self.get_object()
        version = self._version(dataset, number)
        if request.method == "DELETE":
            dataset_version_delete(version=version, actor=request.user)
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(DatasetVersionSerializer(version).data)

    @extend_schema(responses=DatasetPreview)
    @action(detail=True, methods=["get"])
    def preview(self, request: Request, pk: int) -> Response:
        dataset = self.get_object()
        if dataset.status != DatasetStatus.READY:
            raise ApiError(
                status.HTTP_409_CONFLICT,
                "not_ready",
                f"The dataset is {dataset.status}; a preview exists once it is ready.",
            )
        return Response(dataset_preview(dataset=dataset))


class DatasetUploadView(TeamScopedMixin, generics.GenericAPIView):
    """POST /api/datasets/upload/: multipart upload (file, team, kind, name?, options?)."""

    queryset = Dataset.objects.all()
    serializer_class = DatasetUploadSerializer
    parser_classes = [MultiPartParser]

    @extend_schema(
        request={"multipart/form-data": DatasetUploadSerializer},
        responses={201: DatasetSerializer, 202: DatasetSerializer},
    )
    def post(self, request: Request) -> Response:
        payload = DatasetUploadSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        team = self.team_for_write(data["team"])
        upload = data["file"]
        if not hasattr(upload, "temporary_file_path"):
            raise exceptions.ValidationError({"file": ["The upload was not stored; try again."]})
        dataset = services.dataset_upload_create(
            team=team,
            name=data["name"],
            kind=data["kind"],
            options=data["options"],
            upload_path=Path(upload.temporary_file_path()),
            original_filename=upload.name or "upload",
            created_by=request.user,
        )
        if dataset.status == DatasetStatus.FAILED:
            raise _failed(dataset)
        code = (
            status.HTTP_201_CREATED
            if dataset.status == DatasetStatus.READY
            else status.HTTP_202_ACCEPTED
        )
        return Response(DatasetSerializer(dataset).data, status=code)


class BuiltinListView(generics.GenericAPIView):
    """GET /api/datasets/builtins/: the built-in datasets (nothing is downloaded)."""

    serializer_class = None

    @extend_schema(responses=BuiltinList)
    def get(self, request: Request) -> Response:
        from engine.data import BUILTIN_DATASETS

        return Response({"results": [entry.to_json() for entry in BUILTIN_DATASETS.values()]})
