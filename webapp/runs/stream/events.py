"""A run's event stream: store events with a per-run sequence number, then publish them.

The database is the record and the channel layer is a hint (STYLE.md "Events and streams"):
`events_record` gives each event the next sequence numbers of its run and stores it in the same
transaction; only after the commit does anyone publish it to the group `run.<id>`. Sequence
numbers are taken with an UPDATE on the run row, whose lock is held until the commit, so they
are committed in the order they are handed out and a reader that has seen seq N has seen
every committed event below N.

Event shapes are declared once, as the pydantic models of webapp/runs/stream/event_types.py (a union on
`type`; every stored event also carries "run" and "seq"); the browser's types are generated from
them. With NETLOOM_CHECK_EVENTS on (tests), `events_record` checks what it stores and
`events_publish` what it sends, and a misshapen event raises EventSchemaError.

A resumed run redoes the steps after its checkpoint. The metric store keeps the newer point of a
step; the point it replaced is kept as the metric event it was stored and published in (a
RunEvent row of type "metric", `_replaced_keep`), so a replay from 0 holds every seq once and
everything a live watcher was sent.

`progress` is {"epoch", "step", "total_steps", "fraction", "eta_seconds"}, as in the run's JSON.
`event_emit` adds the run row's progress to every status event; the worker's recorder adds the
progress at each metric event's own step to the metric events it publishes (stored metric
points do not keep it, so replayed metric events have none: the `state` frame has the run's).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from webapp.metrics.store import Replaced, metric_points_since, metric_points_write

from ..models import Checkpoint, Run, RunEvent
from .event_types import EVENT_TYPES, events_check

logger = logging.getLogger(__name__)


# The channel-layer message type; the consumer's handler is `run_events`.
GROUP_MESSAGE_TYPE = "run.events"


class LeaseLost(Exception):
    """The worker no longer holds the run's lease: another delivery owns it now."""


def run_group(run_id: int) -> str:
    """Channel-layer group of one run's stream."""
    return f"run.{int(run_id)}"


def finite_or_none(value: Any) -> float | None:
    """A float for JSON and the database: NaN and infinities become None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def events_record(
    *,
    run_id: int,
    events: list[dict[str, Any]],
    lease_token: str | None = None,
    run_fields: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Store events with the run's next sequence numbers and return them as published.

    Args:
        run_id: the run the events belong to.
        events: dicts with a "type" (webapp/runs/stream/event_types.py, without run and seq; a checkpoint's
            "path" is stored, never sent); metric values may be NaN.
        lease_token: when given, the write happens only while this token holds the lease
            (a superseded worker's late events are refused: LeaseLost).
        run_fields: progress columns (step, epoch, total_steps, eta_seconds) updated in the
            same statement.

    Must be called inside no transaction of the caller's that will later roll back; it
    opens its own atomic block.
    """
    if not events and not run_fields:
        return []
    with transaction.atomic():
        runs = Run.objects.filter(pk=run_id)
        if lease_token is not None:
            runs = runs.filter(lease_token=lease_token)
        updated = runs.update(event_seq=F("event_seq") + len(events), **(run_fields or {}))
        if not updated:
            if lease_token is not None:
                raise LeaseLost(f"run {run_id}: lease {lease_token} is no longer held")
            raise Run.DoesNotExist(f"run {run_id} does not exist")
        if not events:
            return []
        last_seq, latest_metrics = Run.objects.filter(pk=run_id).values_list(
            "event_seq", "latest_metrics"
        ).get()
        first_seq = last_seq - len(events) + 1
        stored: list[dict[str, Any]] = []
        points: dict[tuple[str, int], tuple[float, float | None, int]] = {}
        others: list[RunEvent] = []
        checkpoints: dict[str, Checkpoint] = {}
        latest: dict[str, float | None] = {}
        replaced: list[Replaced] = []
        for offset, event in enumerate(events):
            seq = first_seq + offset
            kind = event["type"]
            if kind not in EVENT_TYPES:
                raise ValueError(f"unknown event type {kind!r}")
            if kind == "metric":
                step, epoch = int(event["step"]), float(event["epoch"])
                values = {str(k): finite_or_none(v) for k, v in event["values"].items()}
                for key, value in values.items():
                    # A batch may hold a redone step twice: the later point wins, as in the table,
                    # and the earlier one is kept as its event (replaced below).
                    earlier = points.get((key, step))
                    if earlier is not None:
                        replaced.append((earlier[2], key, step, earlier[0], earlier[1]))
                    points[(key, step)] = (epoch, value, seq)
                    latest[key] = value
                # Built whole: the hot path of the recorder's batches (50,000 points a second).
                stored.append(
                    {"type": "metric", "step": step, "epoch": epoch, "values": values, "run": run_id, "seq": seq}
                )
                continue
            else:
                # Server paths stay on the server: the stream names a checkpoint, never its path.
                data = {k: v for k, v in event.items() if k not in ("type", "run", "seq", "path")}
                others.append(RunEvent(run_id=run_id, seq=seq, type=kind, data=data))
                if kind == "checkpoint":
                    path = str(event.get("path", ""))
                    name = str(event.get("name") or Path(path).name or f"step-{int(event['step']):07d}")
                    checkpoints[name] = Checkpoint(
                        run_id=run_id,
                        name=name,
                        step=int(event["step"]),
                        epoch=float(event.get("epoch", 0.0)),
                        path=path,
                        metrics=dict(event.get("metrics") or {}),
                    )
            stored.append({**{k: v for k, v in event.items() if k != "path"}, "run": run_id, "seq": seq})
        # Inside the transaction: a misshapen event (checks on) is not stored, and the caller fails.
        events_check(stored, where="events_record")
        if points:
            # One upsert of the points (unique run/key/step) plus their block summaries (webapp/metrics/store.py).
            replaced += metric_points_write(run_id=run_id, points=points)
            Run.objects.filter(pk=run_id).update(latest_metrics={**(latest_metrics or {}), **latest})
        if replaced:
            _replaced_keep(run_id, replaced)
        if others:
            RunEvent.objects.bulk_create(others)
        if checkpoints:
            Checkpoint.objects.bulk_create(
                list(checkpoints.values()),
                update_conflicts=True,
                unique_fields=["run", "name"],
                update_fields=["step", "epoch", "path", "metrics"],
            )
    return stored


def _replaced_keep(run_id: int, replaced: list[Replaced]) -> None:
    """Keep metric points that redone steps replaced as the metric events they were sent as.

    A resumed run redoes the steps after its checkpoint, and the metric store keeps one point per
    step (the newer); the events the killed attempt stored and published keep their seqs as
    RunEvent rows of type "metric", so a replay from 0 holds every seq a live watcher received.
    A seq replaced key by key over several batches gathers its values in one row.
    """
    by_seq: dict[int, dict[str, Any]] = {}
    for seq, key, step, epoch, value in replaced:
        event = by_seq.setdefault(seq, {"step": step, "epoch": epoch, "values": {}})
        event["values"][key] = value
    for seq, data in RunEvent.objects.filter(run_id=run_id, seq__in=list(by_seq), type="metric").values_list(
        "seq", "data"
    ):
        by_seq[seq]["values"] = {**data.get("values", {}), **by_seq[seq]["values"]}
    RunEvent.objects.bulk_create(
        [RunEvent(run_id=run_id, seq=seq, type="metric", data=data) for seq, data in by_seq.items()],
        update_conflicts=True,
        unique_fields=["run", "seq"],
        update_fields=["data"],
    )


def events_publish(*, run_id: int, events: list[dict[str, Any]]) -> bool:
    """Publish stored events to the run's group; False (and no exception) when that fails.

    For the web process and short tasks; the training worker publishes from its recorder
    thread (webapp/runs/recorder.py) with its own event loop.
    """
    if not events:
        return True
    events_check(events, where="events_publish")
    layer = get_channel_layer()
    if layer is None:
        return False
    try:
        async_to_sync(layer.group_send)(
            run_group(run_id), {"type": GROUP_MESSAGE_TYPE, "events": events}
        )
    except Exception as exc:  # the channel layer is a hint: never fail the caller for it
        logger.warning("run %s: could not publish %d events: %s", run_id, len(events), exc)
        return False
    return True


def run_progress(run: Run) -> dict[str, Any]:
    """{epoch, step, total_steps, fraction, eta_seconds} of a run (its JSON's and its events' `progress`)."""
    return {
        "epoch": run.epoch, "step": run.step, "total_steps": run.total_steps,
        "fraction": run.fraction, "eta_seconds": run.eta_seconds,
    }


def event_emit(*, run_id: int, event: dict[str, Any]) -> dict[str, Any]:
    """Store one event now and publish it after the surrounding transaction commits.

    A status event gets the run's progress (read from its row, inside the caller's transaction).
    """
    if event.get("type") == "status" and "progress" not in event:
        run = Run.objects.filter(pk=run_id).only("epoch", "step", "total_steps", "eta_seconds").first()
        if run is not None:
            event = {**event, "progress": run_progress(run)}
    (stored,) = events_record(run_id=run_id, events=[event])
    transaction.on_commit(lambda: events_publish(run_id=run_id, events=[stored]))
    return stored


# Seqs read per round of events_since: a round's events are held in memory together.
REPLAY_ROUND = 50_000


def events_since(*, run_id: int, since: int = 0, chunk: int = 2000) -> Iterator[list[dict[str, Any]]]:
    """Stored events with seq > `since`, in seq order, in chunks (metric points regrouped).

    Read in rounds of at most REPLAY_ROUND seqs, up to the run's event_seq at the start of each:
    the points of a round come from one query over the chunks that hold any of its seqs (a chunk
    appended to later is read again by the next round), so a long replay neither reads a chunk
    once per `chunk` events nor holds more than a round in memory.
    """
    cursor = since
    while True:
        upper = (
            Run.objects.filter(pk=run_id).values_list("event_seq", flat=True).first() or 0
        )
        if cursor >= upper:
            return
        upper = min(upper, cursor + REPLAY_ROUND)
        events = _events_between(run_id, cursor, upper)
        for start in range(0, len(events), chunk):
            yield events[start : start + chunk]
        cursor = upper


def _events_between(run_id: int, after: int, upto: int) -> list[dict[str, Any]]:
    """Events with after < seq <= upto, merged from metric points and other events."""
    by_seq: dict[int, dict[str, Any]] = {}
    for seq, key, step, epoch, value in metric_points_since(run_id=run_id, after=after, upto=upto):
        event = by_seq.get(seq)
        if event is None:
            event = by_seq[seq] = {
                "type": "metric", "step": step, "epoch": epoch, "values": {}, "run": run_id, "seq": seq,
            }
        event["values"][key] = value
    for seq, kind, data in (
        RunEvent.objects.filter(run_id=run_id, seq__gt=after, seq__lte=upto)
        .order_by("seq")
        .values_list("seq", "type", "data")
    ):
        kept = by_seq.get(seq)
        if kind == "metric" and kept is not None:
            # A metric event some of whose points a redone step replaced: the rest are in the store.
            kept["values"] = {**data.get("values", {}), **kept["values"]}
            continue
        by_seq[seq] = {"type": kind, **data, "run": run_id, "seq": seq}
    return [by_seq[seq] for seq in sorted(by_seq)]


def flatten(batches: Iterable[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """All events of `events_since` in one list (tests, small runs)."""
    return [event for batch in batches for event in batch]
