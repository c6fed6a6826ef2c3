"""OpenAPI shapes of the runs API's hand-built answers, and the stream's frames as OpenAPI components.

The views return dicts the serializers do not describe (metrics, the config schema, explanation
methods, downloads); the models here say what those bodies are, so `/api/schema/` describes the
real answers and the browser's types can be generated from it (`make gen-types`). The stream's
frames (webapp/runs/stream/event_types.py) are added as components by `stream_components_hook`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema_field,
    inline_serializer,
)
from pydantic import BaseModel, Field, RootModel
from rest_framework import serializers

from engine.train import TrainConfig
from webapp.api.prefer import PREFER_PARAMETER
from webapp.api.schema import OPEN_WIRE_CONFIG, WIRE_CONFIG, components_add, pydantic_components
from webapp.api.serializers import ID_PARAMETER

from ..stream.event_types import stream_openapi_components

# Fields of RunSerializer whose values are built by hand: refer to the frame models' components.
PROGRESS_SCHEMA: dict[str, Any] = {"$ref": "#/components/schemas/Progress"}
RUN_EXPORTS_SCHEMA: dict[str, Any] = {"$ref": "#/components/schemas/RunExports"}
METRIC_VALUES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {"type": "number", "nullable": True},
    "description": "Metric name -> its latest value (null for NaN or infinite).",
}


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JsonObjectField(serializers.JSONField):
    """A JSON column that always holds an object (config, recipe, final metrics)."""


@extend_schema_field(METRIC_VALUES_SCHEMA)
class MetricValuesField(serializers.JSONField):
    """A JSON column {metric name: number or null} (latest metrics)."""


class ExplanationSample(BaseModel):
    """Which sample an explanation is about: a dataset index or an input given by the user."""

    model_config = WIRE_CONFIG

    index: int | None = None
    input: Any = None
    checkpoint: str | None = Field(None, description="The kept checkpoint whose weights are explained (absent: the trained model).")


class RunSummaryBest(BaseModel):
    """The best point of one stored series."""

    model_config = WIRE_CONFIG

    value: float
    step: int
    epoch: float
    mode: Literal["min", "max"] = Field(description="min for loss-like keys, max otherwise.")


class RunSummary(BaseModel):
    """A run's series in two numbers each: the last point and the best one (webapp.runs.selectors.runs_summaries)."""

    model_config = WIRE_CONFIG

    final: dict[str, float | None]
    best: dict[str, RunSummaryBest]


class BestCheckpoint(BaseModel):
    """The run's `best` checkpoint: the weights the default export holds."""

    model_config = WIRE_CONFIG

    name: str
    step: int
    epoch: float
    metrics: dict[str, float | None]


class RunInitRequest(BaseModel):
    """`init` of POST /api/runs/: start from a checkpoint of a run you can see."""

    model_config = WIRE_CONFIG

    run: int = Field(ge=1, le=2**63 - 1, description="The run's id.")
    checkpoint: str = Field(description="The checkpoint's name (best, epoch-0003, step-0000120).")
    mode: Literal["finetune", "resume"] = "finetune"


class PlanParameter(BaseModel):
    """A parameter of the plan: its node, name and shape(s)."""

    model_config = OPEN_WIRE_CONFIG

    node: str
    parameter: str
    shape: list[int] | None = None
    checkpoint_shape: list[int] | None = None
    graph_shape: list[int] | None = None


class InitPlanJson(BaseModel):
    """engine.train.finetune.InitPlan: which parameters a checkpoint gives the graph."""

    model_config = OPEN_WIRE_CONFIG

    loaded: list[str] = Field(description="Parameter names loaded as they are (same name and shape).")
    mismatched: list[PlanParameter] = Field(description="Same name, another shape: initialised afresh.")
    new: list[PlanParameter] = Field(description="Only in the graph: initialised afresh.")
    unused: list[PlanParameter] = Field(description="Only in the checkpoint: left out.")


class RunInit(BaseModel):
    """Where a run's weights started: {} (from scratch) or the checkpoint, the mode and the plan."""

    model_config = OPEN_WIRE_CONFIG

    run: int | None = None
    checkpoint: str | None = None
    mode: Literal["finetune", "resume"] | None = None
    step: int | None = None
    epoch: float | None = None
    plan: InitPlanJson | None = None


class RunOrigin(BaseModel):
    """Who made a run besides its creator: {}, a sweep's trial, or an import of weights."""

    model_config = OPEN_WIRE_CONFIG

    sweep: int | None = None
    trial: int | None = None
    kind: str | None = Field(default=None, description='"import": weights uploaded for a revision.')
    file: str | None = Field(default=None, description="The imported weights file's name.")


@extend_schema_field({"$ref": "#/components/schemas/RunInit"})
class RunInitField(serializers.JSONField):
    """Run.init."""


@extend_schema_field({"$ref": "#/components/schemas/RunOrigin"})
class RunOriginField(serializers.JSONField):
    """Run.origin."""


@extend_schema_field({"allOf": [{"$ref": "#/components/schemas/RunInitRequest"}], "nullable": True})
class RunInitRequestField(serializers.JSONField):
    """`init` of a create: {run, checkpoint, mode}."""


RUN_SUMMARY_SCHEMA: dict[str, Any] = {"$ref": "#/components/schemas/RunSummary"}
BEST_CHECKPOINT_SCHEMA: dict[str, Any] = {
    "allOf": [{"$ref": "#/components/schemas/BestCheckpoint"}], "nullable": True,
}


class ExplanationResult(BaseModel):
    """An explanation's result (engine.explain): attributions, what the model predicted, the delta."""

    model_config = OPEN_WIRE_CONFIG

    method: str
    target: int | None = None
    prediction: int | None = None
    probabilities: list[float] | None = None
    output: list[float] | None = None
    delta: float | None = None
    layer: str | None = None
    shape: list[int] | None = None
    feature_names: list[str] | None = None
    classes: list[str] | None = Field(
        default=None, description="The dataset's class names in output order: prediction and target index them."
    )


@extend_schema_field({"$ref": "#/components/schemas/ExplanationSample"})
class ExplanationSampleField(serializers.JSONField):
    """Explanation.sample: {index} or {input}."""


@extend_schema_field(
    {"allOf": [{"$ref": "#/components/schemas/ExplanationResult"}], "nullable": True}
)
class ExplanationResultField(serializers.JSONField):
    """Explanation.result once computed, else null."""


class _Answer(BaseModel):
    model_config = WIRE_CONFIG


class MetricSeries(_Answer):
    """One stored series as parallel arrays (downsampled: first, last and each bucket's min/max kept)."""

    step: list[int]
    epoch: list[float]
    value: list[float | None]


class MetricsAnswer(_Answer):
    """GET /api/runs/<id>/metrics/."""

    run: int
    last_seq: int = Field(
        description="The run's last event sequence number when the series were read."
    )
    series: dict[str, MetricSeries]


class CompareRun(_Answer):
    """One run in GET /api/runs/compare/: who it is, its config and metrics, and its series."""

    run: int
    last_seq: int = Field(description="The run's last event sequence number when the series were read.")
    series: dict[str, MetricSeries]
    id: int
    name: str
    status: str
    graph: int
    graph_name: str
    revision: int
    graph_revision: int
    dataset: int
    dataset_name: str
    config: dict[str, Any]
    final_metrics: dict[str, Any]
    summary: RunSummary
    created_by: str | None


class ConfigDiffField(_Answer):
    """A config field (dotted path) whose value differs between the compared runs."""

    field: str = Field(description='Dotted path, e.g. "optimizer.lr"; "nodes.fc1.out_features" for a graph parameter.')
    values: dict[str, Any] = Field(description="Run id -> its value (null where the run's config lacks it).")
    distinct: int = Field(description="How many different values the runs have (null counts as one).")


class GraphDiff(_Answer):
    """The runs of one other graph revision and what changed from the first run's."""

    runs: list[int]
    graph: int
    revision: int
    changes: list[str] = Field(description='e.g. "fc1.out_features: 64 -> 128", "node drop added".')


class CompareAnswer(_Answer):
    """GET /api/runs/compare/: the runs in the order of `ids`, the config fields that differ, graph changes."""

    runs: list[CompareRun]
    config_diff: list[ConfigDiffField]
    graph_diff: list[GraphDiff] | None = Field(description="Null when every run trained the same revision.")
    graph_params_diff: list[ConfigDiffField] = Field(
        description='Node parameters that differ between the runs\' graphs, as "nodes.fc1.out_features".'
    )


class InitProblem(_Answer):
    """What would refuse the run (the field a create would name)."""

    field: str
    message: str
    node: str | None = Field(default=None, description="The frozen node whose parameters do not load (config.freeze).")


class InitPlanAnswer(InitPlanJson):
    """POST /api/runs/init-plan/: the engine's plan, the checkpoint it is of, and what a create would refuse."""

    run: int
    checkpoint: str
    mode: Literal["finetune", "resume"]
    step: int
    epoch: float
    problems: list[InitProblem]
    revision: int = Field(description="The graph revision planned for: the latest when the request named none.")


class CheckpointJson(_Answer):
    """A checkpoint of a run (webapp.runs.api.CheckpointSerializer; its folder stays on the server)."""

    name: str = Field(description="The folder's name (epoch-0003, step-0000120, best).")
    kind: Literal["best", "epoch", "cancelled"]
    step: int
    epoch: float
    metrics: dict[str, float | None] = Field(description="Validation metrics of these weights ({} without validation).")
    available: bool = Field(description="False once training pruned it.")
    default: bool = Field(description="True for the checkpoint whose weights the run's default export holds.")
    created_at: datetime


class CheckpointList(RootModel[list[CheckpointJson]]):
    """GET /api/runs/<id>/checkpoints/: oldest first (not paginated)."""


class RunColumnsAnswer(_Answer):
    """GET /api/runs/columns/: the names the runs table can show as columns and the filter can use,
    read from the newest runs of the filter (selectors.COLUMNS_SAMPLE)."""

    metrics: list[str] = Field(description="Final metric names (`metrics.<name>`), sorted.")
    best: list[str] = Field(description="Metric names of the runs' best checkpoints (`best.<name>`), sorted.")
    config: list[str] = Field(description="Dotted config paths (`config.<path>`), sorted.")
    nodes: list[str] = Field(description="Graph parameters as `nodes.<node>.<param>`, sorted.")
    sampled: int = Field(description="How many runs were read (the newest of the filter).")
    complete: bool = Field(description="True when those were all the runs of the filter.")


class ConfigSchemaAnswer(_Answer):
    """GET /api/runs/config-schema/: the engine's TrainConfig JSON Schema and its defaults."""

    schema_: dict[str, Any] = Field(alias="schema", description="TrainConfig.model_json_schema()")
    defaults: dict[str, Any] = Field(description="TrainConfig() as JSON.")


class ExplanationMethod(_Answer):
    """One of the engine's explanation methods (engine.explain.METHODS)."""

    name: str
    label: str
    has_delta: bool
    needs_layer: bool
    help: str


class ExplanationMethodsAnswer(_Answer):
    """GET /api/explanations/methods/."""

    methods: list[ExplanationMethod]


# --- predict, evaluation, samples (webapp/runs/inference/predict.py, evaluation.py) -------


class ClassProbability(_Answer):
    """One class and the probability the model gives it."""

    class_: str = Field(alias="class")
    probability: float


class NetworkView(_Answer):
    """An uploaded image as the network's input has it, before standardising."""

    png: str = Field(description="A data URL of the converted, resized image.")
    size: list[int] = Field(description="[height, width] the upload was resized to.")
    channels: int = Field(description="1: grey, 3: colour.")
    mean: float = Field(description="Mean brightness, 0 (black) to 1 (white).")


class PredictAnswer(_Answer):
    """POST /api/runs/<id>/predict/: the model's answer for one raw input."""

    run: int
    input_kind: Literal["row", "values", "image", "index"] = Field(
        description="row: a JSON object of column values; values: numbers; image: an upload; index: a test sample."
    )
    prediction: str | list[float] = Field(description="The class name (classification) or the predicted values.")
    index: int | None = Field(default=None, description="The predicted class's position in the output.")
    probability: float | None = Field(default=None, description="The predicted class's probability.")
    probabilities: list[ClassProbability] | None = Field(default=None, description="Every class, in output order.")
    input_shape: list[int] = Field(description="Shape of the preprocessed tensor the network saw (batch first).")
    true: dict[str, Any] | list[float] | None = Field(
        default=None, description="For a test index: the stored label ({class, index} or values)."
    )
    seen: NetworkView | None = Field(
        default=None, description="For an image: what the upload was turned into for the network."
    )


class PerClassMetrics(_Answer):
    """Precision, recall, F1 and support of one class on the test split."""

    class_: str = Field(alias="class")
    precision: float | None
    recall: float | None
    f1: float | None
    support: int


class Misclassified(_Answer):
    """A misclassified test sample (`index` into the test split; see /samples/test/<index>/)."""

    index: int
    true: str
    true_index: int
    predicted: str
    predicted_index: int
    probability: float = Field(description="The predicted class's probability (the model's confidence).")
    true_probability: float


class ReliabilityBin(_Answer):
    """One confidence bin of the reliability (calibration) curve; null when the bin is empty."""

    lower: float
    upper: float
    count: int
    confidence: float | None
    accuracy: float | None


class Reliability(_Answer):
    bins: list[ReliabilityBin]
    expected_calibration_error: float | None


class RocCurve(_Answer):
    positive_class: str
    fpr: list[float]
    tpr: list[float]
    thresholds: list[float]
    auc: float | None


class PrecisionRecallCurve(_Answer):
    positive_class: str
    precision: list[float]
    recall: list[float]
    thresholds: list[float]
    average_precision: float | None


class PredictedPairs(_Answer):
    """Predicted-vs-true of (at most 2,000, evenly spaced) test samples, first output."""

    index: list[int]
    true: list[float]
    predicted: list[float]


class ResidualHistogram(_Answer):
    edges: list[float]
    counts: list[int]


class EvaluationAnswer(_Answer):
    """GET/POST /api/runs/<id>/evaluation/: the engine's evaluation on the test split.

    Classification fills accuracy..precision_recall (roc/precision_recall for two classes only);
    regression fills mae..residuals.
    """

    version: int
    run: int
    checkpoint: str | None = Field(description="null: the trained (final) model; else the checkpoint's name.")
    created_at: str
    task: Literal["classification", "regression"]
    split: str
    rows: int
    classes: list[str]
    accuracy: float | None = None
    per_class: list[PerClassMetrics] | None = None
    macro: dict[str, float | None] | None = None
    confusion_matrix: list[list[int]] | None = Field(default=None, description="[true][predicted] counts.")
    misclassified: list[Misclassified] | None = Field(
        default=None, description="Most confident first (at most 1,000)."
    )
    misclassified_total: int | None = None
    reliability: Reliability | None = None
    roc: RocCurve | None = None
    precision_recall: PrecisionRecallCurve | None = None
    mae: float | None = None
    rmse: float | None = None
    r2: float | None = None
    pairs: PredictedPairs | None = None
    pairs_total: int | None = None
    residuals: ResidualHistogram | None = None


class SampleRowsAnswer(_Answer):
    """GET /api/runs/<id>/samples/<split>/: where each sample of the split is in the user's data."""

    split: str
    count: int
    rows: list[int] = Field(description="Source position (0-based data row / archive entry) per sample.")
    file_rows: list[int] | None = Field(
        default=None, description="CSV: the spreadsheet row of each sample (the header is row 1)."
    )
    entries: list[str] | None = Field(default=None, description="Image archive: the entry of each sample.")


class SampleAnswer(_Answer):
    """GET /api/runs/<id>/samples/<split>/<index>/ for table data (images answer a PNG)."""

    split: str
    index: int
    source_index: int
    kind: Literal["table"]
    values: dict[str, Any] = Field(description="Column -> the raw cell as uploaded (null: empty).")
    file_row: int | None = None


PREDICT_REQUEST = {
    "application/json": {
        "type": "object",
        "properties": {
            "input": {"description": "A row {column: raw value} (categories as strings) or numbers of the "
                                     "feature shape.", "oneOf": [{"type": "object", "additionalProperties": {}},
                                                                 {"type": "array", "items": {}}]},
            "index": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1, "description": "A test-split sample."},
        },
    },
    "multipart/form-data": {
        "type": "object",
        "properties": {"image": {"type": "string", "format": "binary"}},
        "required": ["image"],
    },
}
EVALUATION_REQUEST = inline_serializer(
    "EvaluationRequest",
    {"checkpoint": serializers.CharField(required=False, allow_null=True, allow_blank=True,
                                         help_text="A kept checkpoint's name; absent: the final model.")},
)
EVALUATION_PARAMETERS = [
    OpenApiParameter("checkpoint", str, description="A checkpoint's name (its stored evaluation).")
]
EVALUATION_POST_PARAMETERS = [PREFER_PARAMETER]


FILE_DOWNLOAD = OpenApiResponse(OpenApiTypes.BINARY, description="The file, as an attachment.")
# The only JSON download is config.json: the run's training config, as the engine defines it.
JSON_DOWNLOAD = OpenApiResponse(
    {"$ref": "#/components/schemas/TrainConfig"}, description="config.json, as an attachment."
)


def download_responses(media_types: set[str]) -> dict[tuple[int, str], OpenApiResponse]:
    """One 200 per content type a download is served as; a JSON file is an object, not bytes."""
    return {
        (200, media): JSON_DOWNLOAD if media == "application/json" else FILE_DOWNLOAD
        for media in sorted(media_types)
    }
PNG_IMAGE = OpenApiResponse(OpenApiTypes.BINARY, description="The rendering as PNG.")
EXPORT_FORMAT_PARAMETER = OpenApiParameter(
    "format",
    str,
    enum=["safetensors", "python", "onnx", "config", "zip"],
    default="safetensors",
    description="Which file of the export.",
)
STEP_PARAMETER = {"type": "integer", "minimum": -ID_PARAMETER["maximum"], "maximum": ID_PARAMETER["maximum"]}
METRICS_PARAMETERS = [
    OpenApiParameter("keys", str, description="Comma-separated metric names (all when absent)."),
    OpenApiParameter(
        "max_points", {**ID_PARAMETER, "minimum": 2},
        description="Downsample each series to at most this many points (>= 2).",
    ),
    OpenApiParameter("from_step", STEP_PARAMETER, description="First step of the window (the series' first when absent)."),
    OpenApiParameter(
        "to_step", STEP_PARAMETER,
        description="Last step of the window; a window of at most max_points points comes back point for point.",
    ),
]
COMPARE_PARAMETERS = [
    OpenApiParameter("ids", {"type": "string", "pattern": r"^[1-9][0-9]{0,17}(,[1-9][0-9]{0,17}){1,99}$"},
                     required=True, description="Comma-separated run ids (2 to 100)."),
    *METRICS_PARAMETERS,
]
RUN_LIST_PARAMETERS = [
    OpenApiParameter("status", str, description="Comma-separated statuses."),
    OpenApiParameter("graph", ID_PARAMETER),
    OpenApiParameter("dataset", ID_PARAMETER),
    OpenApiParameter("team", ID_PARAMETER),
    OpenApiParameter("tag", str, description="Runs carrying this tag."),
    OpenApiParameter("q", str, description="Text in the run's name or notes, its graph's or dataset's name."),
    OpenApiParameter("sweep", ID_PARAMETER, description="Trials of this sweep (origin.sweep)."),
    OpenApiParameter(
        "filter", str,
        description='An expression over what runs achieved: comparisons (= != < <= > >= ~) of '
        "metrics.<name>, best.<name>, config.<path>, nodes.<node>.<param>, tags, status, name, "
        "created_at, finished_at, sweep, graph, dataset, id with numbers, \"strings\", true, false, "
        'null; and/or/not and parentheses. E.g. metrics.val/accuracy > 0.9 and tags = "baseline". '
        "400 invalid_filter names the column of a mistake.",
    ),
    OpenApiParameter(
        "fields", str, enum=["graph_params"],
        description="graph_params: each run's graph_params ({\"nodes.fc1.out_features\": 64, ...}), "
                    "so a table can show the node parameters that differ; null otherwise.",
    ),
    OpenApiParameter(
        "ordering", str,
        description="Sort order (default -created_at): created_at, finished_at, name, status, duration, "
        "metrics.<name>, best.<name>, config.<path> or nodes.<node>.<param>; '-' first for descending; "
        "runs without the value last.",
    ),
]


def paginated(serializer: type[serializers.Serializer], name: str) -> serializers.Serializer:
    """A page of `serializer` items as webapp.api.pagination answers it, for list actions on a detail."""
    return inline_serializer(
        name,
        {
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": serializer(many=True),
        },
    )


def stream_components_hook(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: add the stream's frame models to the components."""
    return components_add(
        result,
        {
            **stream_openapi_components(),
            **pydantic_components(ExplanationSample, ExplanationResult, TrainConfig, RunSummary, BestCheckpoint,
                                  RunInit, RunOrigin, RunInitRequest),
        },
    )

# GET /api/runs/columns/ takes the list's filters (its ordering and paging do not apply).
RUN_COLUMNS_PARAMETERS = [p for p in RUN_LIST_PARAMETERS if p.name not in ("fields", "ordering")]
