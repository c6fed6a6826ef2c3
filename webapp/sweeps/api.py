"""REST API of sweeps: create, list, detail, cancel (team scoped like runs; editors write).

Views parse, call one service or selector, and serialise. A sweep's trials are ordinary runs:
`GET /api/runs/?sweep=<id>` lists them with everything a run has.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.models import Role
from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin
from webapp.api.parsers import INT_MAX, INT_MIN
from webapp.api.serializers import (
    ID_MAX,
    ID_PARAMETER,
    IdField,
    NameField,
    StrictSerializer,
    TrainingSettingHints,
    comma_separated,
)

from . import services
from .models import Sweep, SweepPruner, SweepStatus, SweepStrategy, TrialState
from .selectors import (
    sweep_best,
    sweep_progress,
    sweep_trials,
    sweeps_filter,
    sweeps_with_trials,
    trial_state,
)

_INT64 = {"type": "integer", "minimum": INT_MIN, "maximum": INT_MAX}  # what the body parser lets through
SPACE_ENTRY_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {"type": "object", "required": ["type", "low", "high"], "additionalProperties": False,
         "properties": {"type": {"type": "string", "enum": ["float"]}, "low": {"type": "number"},
                        "high": {"type": "number"}, "log": {"type": "boolean", "default": False},
                        "step": {"type": "number", "nullable": True}}},
        {"type": "object", "required": ["type", "low", "high"], "additionalProperties": False,
         "properties": {"type": {"type": "string", "enum": ["int"]}, "low": _INT64,
                        "high": _INT64, "step": {**_INT64, "minimum": 1, "default": 1},
                        "log": {"type": "boolean", "default": False}}},
        {"type": "object", "required": ["type", "choices"], "additionalProperties": False,
         "properties": {"type": {"type": "string", "enum": ["categorical"]},
                        "choices": {"type": "array", "minItems": 1,
                                    "items": {"nullable": True, "oneOf": [{"type": "number"}, {"type": "string"},
                                                                          {"type": "boolean"}]}}}},
    ],
}
SPACE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": SPACE_ENTRY_SCHEMA,
    "description": "Search space: a dotted training-config path (optimizer.lr, batch_size) or "
                   "nodes.<node id>.<parameter> -> its distribution. A grid needs int or categorical entries.",
}
PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {"nullable": True, "oneOf": [{"type": "number"}, {"type": "string"}, {"type": "boolean"}]},
    "description": "Space key -> the trial's value.",
}


@extend_schema_field(SPACE_SCHEMA)
class SpaceField(serializers.JSONField):
    """The search space (see SPACE_SCHEMA)."""


@extend_schema_field(PARAMS_SCHEMA)
class ParamsField(serializers.JSONField):
    """A trial's parameters."""


@extend_schema_field({"type": "object", "additionalProperties": {}})
class ObjectField(serializers.JSONField):
    """A JSON object (a config, transforms, a split)."""


@extend_schema_field({"type": "array", "items": {"type": "array", "items": {"type": "number"},
                                                  "minItems": 2, "maxItems": 2},
                      "description": "[[epoch, objective value], ...] as each validation reported it."})
class IntermediateField(serializers.JSONField):
    """A trial's objective per epoch."""


@extend_schema_field({"type": "object", "additionalProperties": False,
                      "properties": {"metric": {"type": "string", "default": "val/loss",
                                                "description": "A validation metric (val/...)."},
                                     "mode": {"type": "string", "enum": ["min", "max"], "default": "min"}}})
class ObjectiveField(serializers.JSONField):
    """The objective in a request (checked by the service, which names `objective.<field>`)."""


class ObjectiveSerializer(serializers.Serializer):
    """Which validation metric the sweep optimises, and in which direction."""

    metric = serializers.CharField(default="val/loss")
    mode = serializers.ChoiceField(choices=["min", "max"], default="min")


class SweepProgressSerializer(serializers.Serializer):
    """How far the sweep is: trials planned (the budget), ended, running, queued, pruned, failed."""

    total = serializers.IntegerField()
    done = serializers.IntegerField()
    running = serializers.IntegerField()
    queued = serializers.IntegerField()
    pruned = serializers.IntegerField()
    failed = serializers.IntegerField()


class SweepBestSerializer(serializers.Serializer):
    """The complete trial with the best objective value."""

    number = serializers.IntegerField()
    run = serializers.IntegerField(allow_null=True)
    value = serializers.FloatField()
    params = ParamsField()


class SweepTrialSerializer(serializers.Serializer):
    """One trial: its parameters, its run (null when it was refused before queueing), its outcome."""

    number = serializers.IntegerField()
    run = serializers.IntegerField(source="run_id", allow_null=True)
    state = serializers.ChoiceField(choices=TrialState.values)
    params = ParamsField()
    value = serializers.FloatField(allow_null=True)
    intermediate = IntermediateField()
    reason = serializers.CharField()

    def to_representation(self, trial: Any) -> dict[str, Any]:
        """The stored trial with its shown state (running while its run trains)."""
        data = super().to_representation(trial)
        data["state"] = trial_state(trial)
        return data


class SweepSerializer(serializers.ModelSerializer):
    """A sweep as the list shows it (the detail adds its trials)."""

    graph = serializers.IntegerField(source="graph_revision.graph_id", read_only=True)
    graph_name = serializers.CharField(source="graph_revision.graph.name", read_only=True)
    revision = serializers.IntegerField(source="graph_revision.number", read_only=True)
    dataset_name = serializers.CharField(source="dataset.name", read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None, allow_null=True)
    status = serializers.ChoiceField(choices=SweepStatus.choices, read_only=True)
    strategy = serializers.ChoiceField(choices=SweepStrategy.values, read_only=True)
    pruner = serializers.ChoiceField(choices=SweepPruner.values, read_only=True)
    objective = ObjectiveSerializer(read_only=True)
    space = SpaceField(read_only=True)
    config = ObjectField(read_only=True)
    transforms = ObjectField(read_only=True, allow_null=True)
    split = ObjectField(read_only=True, allow_null=True)
    progress = serializers.SerializerMethodField()
    best = serializers.SerializerMethodField()

    class Meta:
        model = Sweep
        fields = [
            "id", "team", "name", "status", "error", "strategy", "pruner", "objective", "budget", "parallelism",
            "seed", "space", "graph", "graph_name", "graph_revision", "revision", "dataset", "dataset_name",
            "config", "transforms", "split", "created_by", "created_at", "finished_at", "progress", "best",
        ]
        read_only_fields = fields

    @extend_schema_field(SweepProgressSerializer)
    def get_progress(self, sweep: Sweep) -> dict[str, int]:
        """Trial counts (selectors.sweep_progress)."""
        return sweep_progress(sweep)

    @extend_schema_field(SweepBestSerializer(allow_null=True))
    def get_best(self, sweep: Sweep) -> dict[str, Any] | None:
        """The best complete trial, or null."""
        return sweep_best(sweep)


class SweepDetailSerializer(SweepSerializer):
    """A sweep with every trial."""

    trials = serializers.SerializerMethodField()

    class Meta(SweepSerializer.Meta):
        fields = [*SweepSerializer.Meta.fields, "trials"]
        read_only_fields = fields

    @extend_schema_field(SweepTrialSerializer(many=True))
    def get_trials(self, sweep: Sweep) -> list[dict[str, Any]]:
        """Trials in number order."""
        return SweepTrialSerializer(sweep_trials(sweep), many=True).data


class SweepCreateSerializer(TrainingSettingHints, StrictSerializer):
    """What POST /api/sweeps/ takes: the base (graph revision, dataset, config), the space and the search."""

    team = IdField(required=False)
    name = NameField(max_length=200)
    graph = IdField(required=False)
    revision = IdField(required=False)
    graph_revision = IdField(required=False)
    dataset = IdField()
    config = ObjectField(required=False, default=dict)
    transforms = ObjectField(required=False, default=None)
    split = ObjectField(required=False, default=None)
    space = SpaceField()
    strategy = serializers.ChoiceField(choices=SweepStrategy.values, default=SweepStrategy.TPE)
    pruner = serializers.ChoiceField(choices=SweepPruner.values, default=SweepPruner.NONE)
    objective = ObjectiveField(required=False, default=None,
                               help_text='Which validation metric to optimise: {"metric": "val/loss", "mode": "min"} by default.')
    budget = serializers.IntegerField(min_value=1, max_value=services.MAX_BUDGET, default=20,
                                      help_text="Trials at most (a grid: at most its size).")
    parallelism = serializers.IntegerField(min_value=1, max_value=services.MAX_PARALLELISM, default=2,
                                           help_text="Trials queued or running at once.")
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """A sweep needs `graph_revision`, or `graph` (with `revision`, the latest by default)."""
        if not attrs.get("graph_revision") and not attrs.get("graph"):
            raise serializers.ValidationError({"graph": ["Give graph (and revision) or graph_revision."]})
        return attrs


SWEEP_LIST_PARAMETERS = [
    OpenApiParameter("status", comma_separated(SweepStatus.values),
                     description="Comma-separated statuses (running, succeeded, cancelled, failed)."),
    OpenApiParameter("graph", ID_PARAMETER, description="Only sweeps of this graph."),
    OpenApiParameter("team", ID_PARAMETER, description="Only sweeps of this team."),
]


@extend_schema_view(list=extend_schema(parameters=SWEEP_LIST_PARAMETERS))
class SweepViewSet(TeamScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Sweeps of the user's teams. Viewers read; editors create and cancel."""

    queryset = Sweep.objects.all()
    serializer_class = SweepSerializer
    team_lookup = "team"
    write_role = Role.EDITOR

    def get_serializer_class(self) -> Any:
        """The list shows sweeps without their trials; the detail with them."""
        return SweepSerializer if self.action == "list" else SweepDetailSerializer

    def get_queryset(self) -> Any:
        """Scoped sweeps, optionally filtered by `?status=` and `?graph=`."""
        params = self.request.query_params
        graph_id = None
        if params.get("graph"):
            try:
                graph_id = int(params["graph"])
            except ValueError:
                graph_id = 0
            if not 1 <= graph_id <= ID_MAX:
                raise ApiError(400, "invalid", "graph must be an id.", fields={"graph": ["Must be an integer id."]})
        statuses = [s for s in params["status"].split(",") if s] if params.get("status") else None
        if statuses and any(s not in SweepStatus.values for s in statuses):
            raise ApiError(400, "invalid", f"status must be among {', '.join(SweepStatus.values)}.",
                           fields={"status": [f"Comma-separated, among {', '.join(SweepStatus.values)}."]})
        return sweeps_with_trials(sweeps_filter(super().get_queryset(), statuses=statuses, graph_id=graph_id))

    @extend_schema(request=SweepCreateSerializer, responses={201: SweepDetailSerializer})
    def create(self, request: Request) -> Response:
        """Check the base, the space and the first trial, then queue the first trials (201 with the sweep)."""
        from webapp.runs.selectors import run_create_refs

        body = SweepCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        refs = run_create_refs(
            user=request.user, dataset_id=data["dataset"], graph_revision_id=data.get("graph_revision"),
            graph_id=data.get("graph"), revision=data.get("revision"), team_id=data.get("team"),
            write_role=self.write_role,
        )
        sweep = services.sweep_create(
            user=request.user, team=refs.team, graph_revision=refs.graph_revision, dataset=refs.dataset,
            name=data["name"], config=data.get("config"), transforms=data.get("transforms"),
            split=data.get("split"), space=data["space"], strategy=data["strategy"], pruner=data["pruner"],
            objective=data.get("objective"), budget=data["budget"], parallelism=data["parallelism"],
            seed=data["seed"],
        )
        return Response(SweepDetailSerializer(self.get_queryset().get(pk=sweep.pk)).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: SweepDetailSerializer, 202: SweepDetailSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel: no more trials, queued ones at once (200), running ones within a step (202 until they stop)."""
        sweep = services.sweep_cancel(sweep=self.get_object(), user=request.user)
        sweep = self.get_queryset().get(pk=sweep.pk)
        progress = sweep_progress(sweep)
        code = status.HTTP_202_ACCEPTED if progress["running"] or progress["queued"] else status.HTTP_200_OK
        return Response(SweepDetailSerializer(sweep).data, status=code)
