"""Every event the runs service emits fits its declared model (webapp/runs/stream/event_types.py).

The suite runs with NETLOOM_CHECK_EVENTS on (tests/conftest.py; the worker and daphne of
tests/stack/stack.py through e2e_settings.py), so each event is checked where it is stored,
published and sent. These tests drive every service that emits, read the stream as a browser does,
and prove the check is not silent: a misshapen event is refused, nothing of it is stored, and the
violation is logged with its marker.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import jsonschema
import pytest
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.core.management import call_command
from django.utils import timezone

from webapp.runs.models import Run, RunEvent, RunStatus
from webapp.runs.stream import event_types
from webapp.runs.stream.event_types import (
    VIOLATION_MARKER,
    EventSchemaError,
    events_check,
    frames_check,
)
from webapp.runs.stream.events import (
    GROUP_MESSAGE_TYPE,
    events_record,
    events_since,
    flatten,
    run_group,
)
from webapp.runs.stream.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _close_consumer_connections() -> Any:
    """The consumer's queries run on asgiref's worker thread: close its connection afterwards."""
    yield
    from channels.db import database_sync_to_async
    from django.db import connections

    asyncio.run(database_sync_to_async(connections.close_all)())


@pytest.fixture
def expected_violations() -> Any:
    """For tests that emit misshapen events on purpose: what they add is not the session's failure."""
    before = len(event_types.violations)
    yield
    del event_types.violations[before:]


def _stream_frames(
    run_id: int, user: Any, live: Callable[[], list[dict[str, Any]]] | None = None
) -> list[dict[str, Any]]:
    """Every frame a browser gets: state, the replay, replayed, then what `live()` stores and publishes."""

    async def scenario() -> list[dict[str, Any]]:
        comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{run_id}/")
        comm.scope["user"] = user
        connected, _ = await comm.connect()
        assert connected
        frames = [await comm.receive_json_from(timeout=5)]
        while frames[-1]["type"] != "replayed":
            frames.append(await comm.receive_json_from(timeout=5))
        if live is not None:
            events = await asyncio.to_thread(live)
            await get_channel_layer().group_send(
                run_group(run_id), {"type": GROUP_MESSAGE_TYPE, "events": events}
            )
            frames += [await comm.receive_json_from(timeout=5) for _ in events]
        await comm.disconnect()
        return frames

    return asyncio.run(scenario())


def test_every_event_the_service_emits_fits_its_model(
    user_a: Any, team_a: Any, revision_a: Any, dataset_a: Any
) -> None:
    from webapp.jobs.models import Job
    from webapp.jobs.services import job_claim, job_error, job_finish
    from webapp.runs import services
    from webapp.runs.inference import explanations
    from webapp.runs.scheduling import leases, reaper

    checked_before = dict(event_types.checked_types)
    violations_before = len(event_types.violations)
    run = services.run_create(
        user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2}
    )
    token = leases.run_lease_take(run_id=run.pk, worker="w1")
    assert token
    events_record(
        run_id=run.pk,
        lease_token=token,
        events=[
            {
                "type": "metric",
                "step": 1,
                "epoch": 0.5,
                "values": {"train/loss": 0.9, "train/accuracy": float("nan")},
            },
            {
                "type": "log",
                "level": "info",
                "step": 1,
                "message": "resumed from the checkpoint at step 1",
            },
            {
                "type": "checkpoint",
                "step": 2,
                "epoch": 1.0,
                "name": "epoch-0001",
                "path": "/srv/runs/1/epoch-0001",
            },
        ],
        run_fields={"step": 2, "epoch": 1.0, "total_steps": 4},
    )
    services.run_cancel(run=Run.objects.get(pk=run.pk), user=user_a)  # a log: cancel requested
    assert services.run_finish(
        run_id=run.pk,
        lease_token=token,
        status=RunStatus.SUCCEEDED,
        detail="training finished",
        final_metrics={"val/accuracy": 0.9, "val/confusion_matrix": [[1, 0], [0, 1]]},
        extra={"step": 4},
    )
    export_job = Job.objects.get(kind="runs.export", subject_id=run.pk)  # created by run_finish
    claimed = job_claim(job_id=export_job.pk)
    job_finish(job_id=export_job.pk, attempt=claimed.attempts, error=job_error("export failed: no space left"))
    services.run_log(run_id=run.pk, level="warning", message="export failed: no space left")
    explanation = explanations.explanation_create(
        run=Run.objects.get(pk=run.pk), user=user_a, index=0, method="saliency"
    )
    explanations.explanation_finish(
        explanation_id=explanation.pk, result=None, error="the sample is gone"
    )

    # A second run: cancelled while queued; a third: its worker is lost twice, then it is re-sent.
    queued = services.run_create(
        user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={}
    )
    services.run_cancel(run=queued, user=user_a)
    lost = services.run_create(
        user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={}
    )
    for _ in range(2):
        assert leases.run_lease_take(run_id=lost.pk, worker="w2")
        Run.objects.filter(pk=lost.pk).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        reaper.run_reap()
    Run.objects.filter(pk=lost.pk).update(queued_sent_at=timezone.now() - timedelta(hours=1))
    reaper.run_reap(now=timezone.now())

    def live_metric() -> list[dict[str, Any]]:
        """A live metric event as the worker's recorder publishes it: with the progress at its step."""
        (event,) = events_record(
            run_id=run.pk,
            events=[{"type": "metric", "step": 3, "epoch": 1.5, "values": {"train/loss": 0.4}}],
        )
        return [
            {
                **event,
                "progress": {
                    "epoch": 1.5,
                    "step": 3,
                    "total_steps": 4,
                    "fraction": 0.75,
                    "eta_seconds": 1.0,
                },
            }
        ]

    frames = _stream_frames(queued.pk, user_a)
    frames += _stream_frames(lost.pk, user_a)
    frames += _stream_frames(run.pk, user_a, live=live_metric)

    # Independent of the setting: every frame fits the published JSON Schema.
    out = io.StringIO()
    call_command("events_schema", stdout=out)
    validator = jsonschema.Draft202012Validator(json.loads(out.getvalue()))
    for frame in frames:
        validator.validate(frame)
    kinds = {frame["type"] for frame in frames}
    assert kinds == {"state", "replayed", *event_types.EVENT_TYPES}
    statuses = {frame["status"] for frame in frames if frame["type"] == "status"}
    assert statuses == {"queued", "running", "succeeded", "cancelled", "interrupted"}
    assert any(f["type"] == "metric" and f.get("progress") for f in frames)
    assert all("path" not in f for f in frames)
    # ... and the checks at the choke points saw all of them, and found nothing wrong.
    seen = {
        kind for kind, n in event_types.checked_types.items() if n > checked_before.get(kind, 0)
    }
    assert seen >= kinds
    assert event_types.violations[violations_before:] == []


def test_a_misshapen_event_is_refused_not_stored_and_logged(
    run_a: Any, caplog: pytest.LogCaptureFixture, expected_violations: None
) -> None:
    seq = Run.objects.get(pk=run_a.pk).event_seq
    stored = RunEvent.objects.filter(run=run_a).count()
    with (
        caplog.at_level(logging.ERROR, logger="webapp.runs.stream.event_types"),
        pytest.raises(EventSchemaError) as caught,
    ):
        events_record(
            run_id=run_a.pk,
            events=[
                {"type": "log", "level": "info", "message": "fine"},
                {"type": "log", "level": "loud", "message": "a level nobody knows"},
            ],
        )
    assert "level" in str(caught.value)
    assert Run.objects.get(pk=run_a.pk).event_seq == seq
    assert RunEvent.objects.filter(run=run_a).count() == stored
    assert VIOLATION_MARKER in caplog.text and "events_record" in caplog.text
    assert any("a level nobody knows" in v for v in event_types.violations)
    # A field the model does not declare, a missing one, a wrong type: each is caught.
    for event in (
        {"type": "status", "status": "running", "detail": "", "run": 1, "seq": 2, "colour": "red"},
        {"type": "checkpoint", "step": 3, "run": 1, "seq": 2},
        {"type": "metric", "step": "three", "epoch": 0.1, "values": {}, "run": 1, "seq": 2},
        {"type": "dance", "run": 1, "seq": 2},
    ):
        with pytest.raises(EventSchemaError):
            events_check([event], where="test")


def test_the_consumer_checks_every_frame_it_sends(expected_violations: None) -> None:
    from webapp.runs.stream.consumers import RunConsumer

    sent: list[dict[str, Any]] = []

    async def base_send(message: dict[str, Any]) -> None:
        sent.append(message)

    consumer = RunConsumer()
    consumer.base_send = base_send  # the ASGI send of one connection; what the browser would get
    asyncio.run(consumer.send_json({"type": "replayed", "seq": 3}))
    with pytest.raises(EventSchemaError):
        asyncio.run(consumer.send_json({"type": "replayed", "seq": -1}))
    with pytest.raises(EventSchemaError):
        frames_check([{"type": "state", "seq": 0}], where="test")
    assert [json.loads(m["text"]) for m in sent] == [{"type": "replayed", "seq": 3}]


def test_checks_are_off_unless_the_setting_is_on(settings: Any) -> None:
    settings.NETLOOM_CHECK_EVENTS = False
    events_check([{"type": "dance"}], where="test")  # production: no cost, no check
    frames_check([{"type": "dance"}], where="test")


def test_the_published_schema_is_the_union_of_the_declared_frames(run_a: Any) -> None:
    out = io.StringIO()
    call_command("events_schema", stdout=out)
    schema = json.loads(out.getvalue())
    assert set(schema["discriminator"]["mapping"]) == {
        "state",
        "replayed",
        *event_types.EVENT_TYPES,
    }
    # The stored events replay as they were declared.
    validator = jsonschema.Draft202012Validator(schema)
    for event in flatten(events_since(run_id=run_a.pk)):
        validator.validate(event)
