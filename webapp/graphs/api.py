"""REST API for graphs, revisions, validation, code generation and the op catalog."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.authentication import reads_only
from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin, scope_to_user_teams
from webapp.api.parsers import SpecJSONParser
from webapp.api.serializers import (
    IdField,
    NameField,
    StrictSerializer,
    UserRefSerializer,
    column_bounds,
    column_range,
)

from . import services
from .collab import services as collab_services
from .models import Graph, GraphRevision
from .schema import OpCatalog, RevisionDiff, SpecField, StaleBaseError, ValidationReport
from .selectors import (
    graph_name_warnings,
    graph_revision_diff,
    graphs_with_latest_number,
    revision_latest,
)


class RevisionSummarySerializer(serializers.ModelSerializer):
    created_by = UserRefSerializer(read_only=True, allow_null=True)

    class Meta:
        model = GraphRevision
        fields = [
            "number",
            "spec_hash",
            "valid",
            "error_count",
            "created_by",
            "created_at",
            "layout_updated_at",
            "origin",
        ]
        read_only_fields = fields


class RevisionSerializer(RevisionSummarySerializer):
    spec = serializers.JSONField(read_only=True)
    graph = serializers.IntegerField(source="graph_id", read_only=True)

    class Meta(RevisionSummarySerializer.Meta):
        fields = ["graph", *RevisionSummarySerializer.Meta.fields, "spec"]
        read_only_fields = fields


class GraphSerializer(serializers.ModelSerializer):
    latest_revision = serializers.SerializerMethodField()

    class Meta:
        model = Graph
        fields = ["id", "team", "name", "latest_revision", "updated_at"]
        read_only_fields = fields

    def get_latest_revision(self, graph: Graph) -> int | None:
        value = getattr(graph, "latest_number", None)
        if value is None and not hasattr(graph, "latest_number"):
            latest = revision_latest(graph=graph)
            value = latest.number if latest is not None else None
        return value


class GraphDetailSerializer(GraphSerializer):
    created_by = UserRefSerializer(read_only=True, allow_null=True)
    latest = serializers.SerializerMethodField()

    class Meta(GraphSerializer.Meta):
        fields = [*GraphSerializer.Meta.fields, "created_by", "created_at", "latest"]
        read_only_fields = fields

    @extend_schema_field(RevisionSerializer(allow_null=True))
    def get_latest(self, graph: Graph) -> dict[str, Any] | None:
        without_spec = bool(self.context.get("without_spec"))  # ?spec=0: the editor's poll
        revision = revision_latest(graph=graph, with_spec=not without_spec)
        if revision is None:
            return None
        if without_spec:  # the same shape (the schema's Revision), its spec left out as null
            return {**RevisionSummarySerializer(revision).data, "graph": graph.pk, "spec": None}
        return RevisionSerializer(revision).data


class GraphWarningSerializer(serializers.Serializer):
    """Something the request did that is allowed but likely unmeant (selectors.graph_name_warnings)."""

    code = serializers.CharField(help_text="duplicate_name: other graphs of the team have this name.")
    field = serializers.CharField()
    message = serializers.CharField()
    graphs = serializers.ListField(child=serializers.IntegerField(), help_text="The other graphs concerned.")


class GraphSavedSerializer(GraphDetailSerializer):
    """A created or renamed graph, with what it should be told (a name other graphs have)."""

    warnings = serializers.SerializerMethodField()

    class Meta(GraphDetailSerializer.Meta):
        fields = [*GraphDetailSerializer.Meta.fields, "warnings"]
        read_only_fields = fields

    @extend_schema_field(GraphWarningSerializer(many=True))
    def get_warnings(self, graph: Graph) -> list[dict[str, Any]]:
        return graph_name_warnings(graph=graph)


class GraphCreateSerializer(StrictSerializer):
    team = IdField()
    name = NameField(max_length=200)
    spec = SpecField(required=False)


class GraphRenameSerializer(StrictSerializer):
    name = NameField(max_length=200)


class SpecSerializer(StrictSerializer):
    spec = SpecField()


class RevisionSaveSerializer(SpecSerializer):
    base = serializers.IntegerField(
        required=False,
        allow_null=True,
        **column_bounds(GraphRevision, "number", min_value=1),
        help_text="The revision the editor started from: when someone saved a newer one since, "
        "the save is refused (409 stale_base, with `latest` and `base`). Leave out to not check.",
    )
    force = serializers.BooleanField(
        default=False, help_text="Save even when `base` is no longer the latest."
    )


class CollabSaveSerializer(StrictSerializer):
    message = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=500,
        help_text="Why this revision was saved (kept in the team's audit log).",
    )


class CollabStateSerializer(serializers.Serializer):
    spec = SpecField(help_text="The spec the shared document stands for now (what a save would store).")
    updates = serializers.IntegerField(help_text="Updates in the document's log since its last compaction.")
    base_revision = serializers.IntegerField(
        allow_null=True, help_text="The revision the shared document was seeded from (null: an empty graph)."
    )


# A revision number in a query string: 1 up to what its column holds (the schema says the same).
REVISION_NUMBER = {"type": "integer", "minimum": 1, "maximum": column_range(GraphRevision, "number")[1]}


def revision_number_param(request: Request, name: str) -> int | None:
    """A revision number from the query string, or None (the caller answers 400 naming it)."""
    value = request.query_params.get(name, "").strip()
    if not (value.isascii() and value.isdigit()) or len(value) > 10:
        return None
    number = int(value)
    return number if REVISION_NUMBER["minimum"] <= number <= REVISION_NUMBER["maximum"] else None


class LayoutSerializer(StrictSerializer):
    layout = serializers.DictField(required=False)
    ui = serializers.DictField(required=False)
    spec = SpecField(required=False, help_text="optional: must have the revision's spec_hash")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("Send layout, ui or spec.")
        return attrs


def invalid_spec_error(report: Any) -> ApiError:
    """400 for a spec with errors: the engine's node-keyed errors under "errors"."""
    errors = report.to_json()["errors"]
    fields: dict[str, list[str]] = {}
    for problem in errors:
        key = f"nodes.{problem['node']}" if problem["node"] else "spec"
        fields.setdefault(key, []).append(problem["message"])
    count = len(errors)
    return ApiError(
        status.HTTP_400_BAD_REQUEST,
        "invalid_spec",
        f"The graph has {count} problem{'s' if count != 1 else ''}: {report.summary()}",
        fields=fields,
        extra={"errors": errors},
    )


def generate_source(spec: Any) -> str:
    """Python source of a spec, or a 400 with the engine's node-keyed errors."""
    from engine.codegen import codegen
    from engine.validate import validate

    report = validate(spec, services.engine_limits())
    if not report.valid:
        raise invalid_spec_error(report)
    return codegen(report.spec, limits=services.engine_limits())


SourceResponse = inline_serializer("GeneratedSource", {"source": serializers.CharField()})


class GraphViewSet(
    TeamScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Graphs of the user's teams."""

    parser_classes = [SpecJSONParser]  # a spec body: NETLOOM_MAX_SPEC_BYTES, 413 past it

    queryset = graphs_with_latest_number(Graph.objects.select_related("created_by")).order_by("-updated_at", "-id")

    def get_serializer_class(self):
        return GraphDetailSerializer if self.action == "retrieve" else GraphSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "spec", bool, description="spec=0: `latest` with `spec` null (for polling: who saved "
                "the latest revision, when)."
            )
        ]
    )
    def retrieve(self, request: Request, pk: int) -> Response:
        graph = self.get_object()
        without_spec = request.query_params.get("spec", "").lower() in ("0", "false", "no")
        return Response(GraphDetailSerializer(graph, context={"without_spec": without_spec}).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("from", REVISION_NUMBER, required=True, description="The revision number to compare from."),
            OpenApiParameter("to", REVISION_NUMBER, required=True, description="The revision number to compare to."),
        ],
        responses=RevisionDiff,
    )
    def diff(self, request: Request, pk: int) -> Response:
        """Nodes added, removed and changed (parameter by parameter), edges added and removed,
        inputs and outputs, from revision `from` to `to`; layout and UI never count."""
        graph = self.get_object()
        numbers = {name: revision_number_param(request, name) for name in ("from", "to")}
        bad = {name: ["A revision number (1, 2, ...) is required."] for name, n in numbers.items() if n is None}
        if bad:
            raise ApiError(
                status.HTTP_400_BAD_REQUEST,
                "invalid",
                f"{', '.join(bad)}: a revision number (1, 2, ...) is required.",
                fields=bad,
            )
        return Response(
            graph_revision_diff(graph=graph, from_number=numbers["from"], to_number=numbers["to"])
        )

    @extend_schema(request=GraphCreateSerializer, responses={201: GraphSavedSerializer})
    def create(self, request: Request) -> Response:
        payload = GraphCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        team = self.team_for_write(payload.validated_data["team"])
        graph = services.graph_create(
            team=team,
            name=payload.validated_data["name"],
            spec=payload.validated_data.get("spec"),
            created_by=request.user,
        )
        graph = self.get_queryset().get(pk=graph.pk)
        return Response(GraphSavedSerializer(graph).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=GraphRenameSerializer, responses=GraphSavedSerializer)
    def partial_update(self, request: Request, pk: int) -> Response:
        graph = self.get_object()
        payload = GraphRenameSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        services.graph_rename(graph=graph, name=payload.validated_data["name"], actor=request.user)
        return Response(GraphSavedSerializer(self.get_queryset().get(pk=graph.pk)).data)

    def perform_destroy(self, instance: Graph) -> None:
        services.graph_delete(graph=instance, actor=self.request.user)

    @extend_schema(responses=CollabStateSerializer)
    def collab(self, request: Request, pk: int) -> Response:
        """The shared canvas (live co-editing, docs/subsystems/coediting.md): the spec it stands for."""
        graph = self.get_object()
        return Response(collab_services.collab_state(graph=graph))

    @extend_schema(
        request=CollabSaveSerializer, responses={201: RevisionSerializer, 200: RevisionSerializer}
    )
    def collab_save(self, request: Request, pk: int) -> Response:
        """Save the shared canvas as a new revision (validated as any save; 200 with the latest
        revision when nothing but the layout changed). The shared canvas is not reset."""
        graph = self.get_object()
        self.require_role(graph.team_id, self.write_role)
        payload = CollabSaveSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        revision, created = collab_services.collab_save(
            graph=graph, created_by=request.user, message=payload.validated_data.get("message", "")
        )
        return Response(
            RevisionSerializer(revision).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class RevisionViewSet(
    TeamScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Revisions of one graph: list, save (POST), read, change the canvas layout, source code."""

    parser_classes = [SpecJSONParser]

    queryset = GraphRevision.objects.select_related("created_by", "graph")
    team_lookup = "graph__team"
    lookup_field = "number"

    def get_serializer_class(self):
        return RevisionSummarySerializer if self.action == "list" else RevisionSerializer

    def get_graph(self) -> Graph:
        """The graph from the URL, 404 unless it belongs to one of the user's teams."""
        graphs = scope_to_user_teams(Graph.objects.all(), user=self.request.user)
        return get_object_or_404(graphs, pk=self.kwargs["graph_pk"])

    def get_queryset(self):
        return super().get_queryset().filter(graph_id=self.get_graph().pk).order_by("-number")

    @extend_schema(
        request=RevisionSaveSerializer,
        responses={
            201: RevisionSerializer,
            200: RevisionSerializer,
            409: OpenApiResponse(
                StaleBaseError,
                description="stale_base: someone saved a newer revision after `base` "
                "(send force: true to save anyway).",
            ),
        },
    )
    def create(self, request: Request, graph_pk: int) -> Response:
        graph = self.get_graph()
        # Role check against the graph's team: viewers read, editors save.
        self.require_role(graph.team_id, self.write_role)
        payload = RevisionSaveSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        revision, created = services.revision_save(
            graph=graph,
            spec=data["spec"],
            created_by=request.user,
            base=data.get("base"),
            force=data["force"],
        )
        return Response(
            RevisionSerializer(revision).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    @extend_schema(request=LayoutSerializer, responses=RevisionSerializer)
    def partial_update(self, request: Request, graph_pk: int, number: int) -> Response:
        revision = self.get_object()
        payload = LayoutSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        layout, ui = data.get("layout"), data.get("ui")
        if "spec" in data:
            normalised, digest, _ = services.check_spec(data["spec"])
            if digest != revision.spec_hash:
                raise ApiError(
                    status.HTTP_409_CONFLICT,
                    "spec_changed",
                    "The model changed, not only its layout: save it as a new revision (POST).",
                )
            layout = layout if layout is not None else normalised.get("layout")
            ui = ui if ui is not None else normalised.get("ui")
        revision = services.revision_update_layout(revision=revision, layout=layout, ui=ui)
        return Response(RevisionSerializer(revision).data)

    @extend_schema(responses=SourceResponse)
    def code(self, request: Request, graph_pk: int, number: int) -> Response:
        revision = self.get_object()
        return Response({"source": generate_source(revision.spec)})


class ValidateView(APIView):
    """POST /api/graphs/validate/ {spec}: the engine's report, unchanged (200 even when invalid)."""

    parser_classes = [SpecJSONParser]

    @reads_only  # a read token may check a graph: nothing is stored
    @extend_schema(request=SpecSerializer, responses=ValidationReport)
    def post(self, request: Request) -> Response:
        from engine.validate import validate

        payload = SpecSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        return Response(
            validate(payload.validated_data["spec"], services.engine_limits()).to_json()
        )


class CodegenView(APIView):
    """POST /api/graphs/codegen/ {spec}: {"source"}, or 400 with the node-keyed errors."""

    parser_classes = [SpecJSONParser]

    @reads_only  # nothing is stored
    @extend_schema(request=SpecSerializer, responses=SourceResponse)
    def post(self, request: Request) -> Response:
        payload = SpecSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        return Response({"source": generate_source(payload.validated_data["spec"])})


class OpsView(GenericAPIView):
    """GET /api/ops/: the engine's op catalog, unchanged."""

    serializer_class = None

    @extend_schema(responses=OpCatalog)
    def get(self, request: Request) -> Response:
        from engine.ops import catalog_json

        return Response(catalog_json())
