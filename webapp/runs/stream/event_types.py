"""Every frame of a run's stream, declared once: pydantic models, a union on `type`, its JSON Schema.

The stream (`ws/runs/<id>/`, webapp/runs/stream/consumers.py) sends a `state` frame, the stored events
after the client's `since`, a `replayed` frame, then live events. Events are stored by
`events.events_record` (which gives them `run` and `seq`) and published to the group `run.<id>`;
the browser's types are generated from these models (`make gen-types`: they are components of
the OpenAPI schema, see webapp/runs/api/schema.py), so a field is added here and nowhere else.

With the setting NETLOOM_CHECK_EVENTS on (the test settings turn it on), every event is checked
against its model at the three choke points: what `events_record` stores, what `events_publish`
sends and every frame the consumer sends. A frame that does not fit raises EventSchemaError and
logs EVENT_SCHEMA_VIOLATION, so a test that emits it fails, in this process or in a worker's log.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Annotated, Any, Literal

from django.conf import settings
from pydantic import BaseModel, Field, TypeAdapter, ValidationError, WithJsonSchema

from webapp.api.schema import WIRE_CONFIG

from ..models import ExplanationStatus, ExportStatus, RunStatus

logger = logging.getLogger(__name__)

VIOLATION_MARKER = "EVENT_SCHEMA_VIOLATION"

RunStatusName = Literal[tuple(RunStatus.values)]  # type: ignore[valid-type]
ExplanationStatusName = Literal[tuple(ExplanationStatus.values)]  # type: ignore[valid-type]
ExportStatusName = Literal[tuple(ExportStatus.values)]  # type: ignore[valid-type]
LogLevel = Literal["debug", "info", "warning", "error"]
# A metric value: NaN and infinities are stored and sent as null.
MetricValue = float | None


class _Wire(BaseModel):
    """A JSON object of the wire: no field the model does not declare."""

    model_config = WIRE_CONFIG


class Progress(_Wire):
    """How far a run is: the run JSON's `progress` and the `progress` of status and live metric events."""

    epoch: float
    step: int
    total_steps: int | None
    fraction: float | None = Field(
        description="Done share of total_steps, 0..1; null before the total is known."
    )
    eta_seconds: float | None = Field(description="Estimated seconds left at this attempt's speed.")


class RunExports(_Wire):
    """Which downloads of a run exist (the run JSON's `exports`, selectors.run_exports)."""

    status: ExportStatusName = Field(description="The export task (ONNX and the zip).")
    safetensors: bool
    python: bool
    config: bool
    zip: bool
    onnx: bool | Literal["pending", "unavailable"] = Field(
        description='true: ready; "pending": being made; "unavailable": not for this graph (see note); '
        "false: nothing is making it."
    )
    note: str


class _Event(_Wire):
    """What every stored event carries besides its own fields."""

    run: int = Field(description="The run's id.")
    seq: int = Field(
        ge=1, description="The event's sequence number in its run's stream (1, 2, ...)."
    )


class MetricEvent(_Event):
    """Metric points of one step (stored as metric points; replayed events are regrouped from them)."""

    type: Literal["metric"]
    step: int
    epoch: float
    values: dict[str, MetricValue]
    progress: Progress | None = Field(
        default=None, description="On live events of the worker only; replayed ones have none."
    )


class StatusEvent(_Event):
    """The run changed status (queued, running, a final one, interrupted and requeued)."""

    type: Literal["status"]
    status: RunStatusName
    detail: str = ""
    error: str | None = None
    step: int | None = Field(default=None, description="On a final status: the steps trained.")
    cancel_observed_step: int | None = Field(
        default=None,
        description="On a cancelled run's final status: where the worker saw the request.",
    )
    progress: Progress | None = Field(
        default=None,
        description="The run's progress when the status changed (older events have none).",
    )
    final_metrics: dict[str, Any] | None = Field(
        default=None, description="On the final status of a run that trained."
    )
    exports: RunExports | None = Field(
        default=None, description='On "succeeded": the downloads (ONNX usually pending).'
    )


class LogEvent(_Event):
    """A line for the run's log."""

    type: Literal["log"]
    level: LogLevel
    message: str
    step: int | None = None


class CheckpointEvent(_Event):
    """A checkpoint was written (named by its folder; the server path is never sent)."""

    type: Literal["checkpoint"]
    step: int
    epoch: float = 0.0
    name: str
    # The validation metrics the checkpoint's weights had (absent or {} without validation).
    metrics: dict[str, float | None] = {}


class ExplanationEvent(_Event):
    """An explanation was queued or finished (GET /api/explanations/<id>/ has the result)."""

    type: Literal["explanation"]
    id: int
    status: ExplanationStatusName
    method: str
    error: str | None = None


class ExportEvent(_Event):
    """The export task (ONNX and the zip) finished: the run's downloads now."""

    type: Literal["export"]
    status: ExportStatusName
    exports: RunExports


RunEvent = Annotated[
    MetricEvent | StatusEvent | LogEvent | CheckpointEvent | ExplanationEvent | ExportEvent,
    Field(discriminator="type"),
]


_RUN_OBJECT = {
    "type": "object",
    "description": "The run as GET /api/runs/<id>/ returns it (OpenAPI component Run).",
}


class StateFrame(_Wire):
    """First frame of each connection: the run as it is now and its last sequence number."""

    type: Literal["state"]
    # Shaped by RunSerializer: the OpenAPI component "Run" (stream_openapi_components refers to it).
    run: Annotated[dict[str, Any], WithJsonSchema(_RUN_OBJECT)]
    seq: int = Field(ge=0)


class ReplayedFrame(_Wire):
    """Every stored event after `since` has been sent; live events follow."""

    type: Literal["replayed"]
    seq: int = Field(ge=0)


class BatchFrame(_Wire):
    """Several consecutive events in one frame (clients that ask with `?batch=1`; issue 12).

    A live group message becomes one frame carrying all its new events, serialised once for every
    client at the same sequence number; the replay is sent in such frames too. An envelope around
    RunStreamFrame's events, so it is its own component (`RunStreamBatchFrame`), not one more
    member of that union: a client that does not ask for batches never sees one.
    """

    type: Literal["batch"]
    events: list[RunEvent] = Field(min_length=1, description="Consecutive events, in seq order.")
    seq: int = Field(ge=1, description="The seq of the last event in `events`.")


StreamFrame = Annotated[
    StateFrame
    | ReplayedFrame
    | MetricEvent
    | StatusEvent
    | LogEvent
    | CheckpointEvent
    | ExplanationEvent
    | ExportEvent,
    Field(discriminator="type"),
]

EVENT_MODELS: tuple[type[_Event], ...] = (
    MetricEvent,
    StatusEvent,
    LogEvent,
    CheckpointEvent,
    ExplanationEvent,
    ExportEvent,
)
FRAME_MODELS: tuple[type[_Wire], ...] = (StateFrame, ReplayedFrame, BatchFrame, *EVENT_MODELS)
EVENT_TYPES: tuple[str, ...] = tuple(
    model.model_fields["type"].annotation.__args__[0] for model in EVENT_MODELS
)

_events = TypeAdapter(RunEvent)
_frames = TypeAdapter(StreamFrame)
_batch = TypeAdapter(BatchFrame)

# What the checks saw in this process (tests assert on them): frames per type, and every violation.
checked_types: Counter[str] = Counter()
violations: list[str] = []


class EventSchemaError(ValueError):
    """An event or frame does not fit its declared model."""


def checks_enabled() -> bool:
    """True when NETLOOM_CHECK_EVENTS is on (tests; off in production: the check costs a little)."""
    return bool(getattr(settings, "NETLOOM_CHECK_EVENTS", False))


def _check(adapter: TypeAdapter[Any], items: list[dict[str, Any]], where: str) -> None:
    for item in items:
        try:
            adapter.validate_python(item, strict=False)
        except ValidationError as exc:
            message = (
                f"{VIOLATION_MARKER} at {where}: {exc.error_count()} problem(s) in {item!r}: {exc}"
            )
            violations.append(message)
            logger.error("%s", message)
            raise EventSchemaError(message) from None
        checked_types[str(item.get("type"))] += 1


def events_check(events: list[dict[str, Any]], *, where: str) -> None:
    """Check stored events (with run and seq) against their models, when checks are on."""
    if checks_enabled():
        _check(_events, events, where)


def frames_check(frames: list[dict[str, Any]], *, where: str) -> None:
    """Check stream frames (state, replayed or an event) against their models, when checks are on."""
    if checks_enabled():
        for frame in frames:
            _check(_batch if frame.get("type") == "batch" else _frames, [frame], where)


def stream_json_schema() -> dict[str, Any]:
    """JSON Schema of one stream frame (`manage.py events_schema` prints it)."""
    schema = _frames.json_schema(ref_template="#/$defs/{model}")
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "RunStreamFrame",
        "description": "One frame of ws/runs/<id>/ (webapp/runs/event_types.py).",
        **schema,
    }
    return schema


def stream_openapi_components() -> dict[str, dict[str, Any]]:
    """The frame models as OpenAPI components (referring to #/components/schemas/...), with the unions."""
    schema = _frames.json_schema(ref_template="#/components/schemas/{model}")
    components: dict[str, dict[str, Any]] = dict(schema.pop("$defs", {}))
    components["StateFrame"]["properties"]["run"] = {"$ref": "#/components/schemas/Run"}
    components["RunStreamFrame"] = {
        "description": "One frame of ws/runs/<id>/: state, replayed, or a stored event.",
        **schema,
    }
    event_schema = _events.json_schema(ref_template="#/components/schemas/{model}")
    event_schema.pop("$defs", None)
    components["RunEvent"] = {"description": "A stored event of a run's stream.", **event_schema}
    batch_schema = _batch.json_schema(ref_template="#/components/schemas/{model}")
    batch_schema.pop("$defs", None)
    components["RunStreamBatchFrame"] = batch_schema
    return components
