"""The training worker's recorder: the trainer hands points over and never waits.

Used only by the `runs.train` task (workers/runs.py), so it lives with the workers; it writes
through the runs app's services and selectors like any other caller.

`RunRecorder` is the engine's `MetricSink` and stop check. Its hot-path methods only put a
dict on a bounded in-memory queue or read a bool. One background thread does everything that
touches the network:

- writes queued events in batches (events_record: metric points upserted on run/key/step,
  so a redone step overwrites and a redelivered task never duplicates), fenced by the lease;
- publishes what it stored to the channel-layer group `run.<id>`, at most a few messages a
  second, each carrying every new event; when Redis is down it drops the hint (the database
  already has the record) and tries again a second later, so a restarted Redis never stops
  training;
- reads the cancel flag every RUNS_CONTROL_POLL_SECONDS and renews the lease every
  RUNS_HEARTBEAT_SECONDS, writing progress at the same time.

`close()` flushes what is left (the end of a run is always stored).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.db import close_old_connections, connection

from webapp.runs import conf
from webapp.runs.scheduling.leases import run_control_read, run_heartbeat
from webapp.runs.stream.events import GROUP_MESSAGE_TYPE, LeaseLost, events_record, run_group

logger = logging.getLogger(__name__)

_BATCH_MAX = 5000
# Put by close() to end the thread's wait for events at once; never stored.
_WAKE: Any = object()

# The recorders of this process, by run id: the reaper on this process's timer never takes their
# runs (workers/runs.py::_reaper_loop). Filled by start(), emptied by close().
_live: dict[int, RunRecorder] = {}
_live_lock = threading.Lock()


def live_run_ids() -> list[int]:
    """Runs whose lease a recorder of this process is renewing (its thread alive).

    After a stall of the whole process (a busy host, a long pause of the GIL) longer than the
    lease, this process's reaper thread may wake before the recorder's: it must not take back
    a run this very process is training. Another worker's reaper still may; the recorder then
    finds the lease lost.
    """
    with _live_lock:
        return [run_id for run_id, recorder in _live.items() if recorder._thread.is_alive()]


class RunRecorder:
    """MetricSink + stop check for one leased run; all I/O happens on its own thread."""

    def __init__(self, run_id: int, lease_token: str) -> None:
        self.run_id = run_id
        self.lease_token = lease_token
        self.cancel_requested = False
        # Its worker is shutting down: stop, checkpoint and queue the run again (workers/training.py).
        self.drain_requested = False
        self.lease_lost = False
        # Step the trainer was at when this worker first saw the cancel flag.
        self.cancel_observed_step: int | None = None
        self.dropped = 0
        # Progress, written by the trainer's callbacks (plain attribute writes: no locks needed).
        self.step = 0
        self.epoch = 0.0
        self.total_steps: int | None = None
        self._started_step = 0
        self._started_at = time.monotonic()
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=int(conf.get("RUNS_RECORDER_QUEUE")))
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"run-{run_id}-recorder", daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._layer: Any = None
        self._publish_paused_until = 0.0
        self.published_messages = 0

    # --- the trainer's side (never blocks) ------------------------------------------------

    def log(self, step: int, epoch: float, values: dict[str, float]) -> None:
        """MetricSink: queue one point of several metrics."""
        self.emit({"type": "metric", "step": int(step), "epoch": float(epoch), "values": dict(values)})

    def emit(self, event: dict[str, Any]) -> None:
        """Queue any event (status, log, checkpoint); dropped, never awaited, when the queue is full."""
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1

    def should_stop(self) -> bool:
        """The trainer's stop check: cancel or drain requested, or lease lost (cached flags, no I/O)."""
        return self.cancel_requested or self.drain_requested or self.lease_lost

    def progress(self, *, step: int, epoch: float, total_steps: int | None = None) -> None:
        """Note where the trainer is; written to the run row with the next batch or heartbeat."""
        self.step = int(step)
        self.epoch = float(epoch)
        if total_steps is not None:
            self.total_steps = int(total_steps)

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> RunRecorder:
        """Start the background thread."""
        self._started_at = time.monotonic()
        self._started_step = self.step
        with _live_lock:
            _live[self.run_id] = self
        self._thread.start()
        return self

    def close(self, timeout: float = 60.0) -> None:
        """Flush every queued event to the database (and publish it), then stop the thread."""
        self._closing.set()
        try:  # wake the thread from its wait for events now, not at the end of the wait
            self._queue.put_nowait(_WAKE)
        except queue.Full:
            pass
        self._thread.join(timeout)
        with _live_lock:
            if _live.get(self.run_id) is self:
                del _live[self.run_id]
        if self._thread.is_alive():
            logger.error("run %s: recorder did not finish flushing within %ss", self.run_id, timeout)
        if self.dropped:
            # Only when the database fell RUNS_RECORDER_QUEUE events behind; say so, loudly.
            logger.error("run %s: %d events were dropped because the database fell behind",
                         self.run_id, self.dropped)

    # --- the background thread -------------------------------------------------------------------

    def _run(self) -> None:
        flush_every = float(conf.get("RUNS_FLUSH_SECONDS"))
        publish_every = 1.0 / max(float(conf.get("RUNS_PUBLISH_PER_SECOND")), 0.01)
        poll_every = float(conf.get("RUNS_CONTROL_POLL_SECONDS"))
        heartbeat_every = float(conf.get("RUNS_HEARTBEAT_SECONDS"))
        pending: list[dict[str, Any]] = []
        unpublished: list[dict[str, Any]] = []
        last_flush = last_publish = last_poll = time.monotonic()
        # The first heartbeat at once: the lease was stamped before the claim committed.
        last_heartbeat = last_flush - heartbeat_every
        self._loop = asyncio.new_event_loop()
        try:
            while True:
                closing = self._closing.is_set()
                self._drain(pending, timeout=0.0 if closing else min(flush_every, poll_every) / 2)
                now = time.monotonic()
                if pending and (closing or now - last_flush >= flush_every or len(pending) >= _BATCH_MAX):
                    unpublished.extend(self._write(pending))
                    last_flush = now
                if unpublished and (closing or now - last_publish >= publish_every):
                    self._publish(unpublished)
                    unpublished = []
                    last_publish = now
                if now - last_heartbeat >= heartbeat_every:
                    self._heartbeat()
                    last_heartbeat = now
                if now - last_poll >= poll_every:
                    self._poll()
                    last_poll = now
                if closing and self._queue.empty() and not pending:
                    break
                if self.lease_lost:
                    pending.clear()
            if not self.lease_lost:
                self._heartbeat()  # final progress
        except Exception:  # never let the recorder kill the worker; the trainer keeps going
            logger.exception("run %s: recorder thread failed", self.run_id)
        finally:
            self._loop.close()
            connection.close()

    def _drain(self, pending: list[dict[str, Any]], timeout: float) -> None:
        try:
            event = self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
        except queue.Empty:
            return
        if event is not _WAKE:
            pending.append(event)
        while len(pending) < _BATCH_MAX:
            try:
                event = self._queue.get_nowait()
            except queue.Empty:
                return
            if event is not _WAKE:
                pending.append(event)

    def _eta(self, step: int) -> float | None:
        """Seconds left from `step`, at the speed of this attempt so far (None before any step)."""
        if not self.total_steps:
            return None
        done = self.step - self._started_step
        elapsed = time.monotonic() - self._started_at
        if done <= 0 or elapsed <= 0:
            return None
        return max(0.0, (self.total_steps - step) * elapsed / done)

    def _run_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"step": self.step, "epoch": self.epoch}
        if self.total_steps:
            fields["total_steps"] = self.total_steps
            eta = self._eta(self.step)
            if eta is not None:
                fields["eta_seconds"] = eta
        return fields

    def _progress_at(self, step: int, epoch: float) -> dict[str, Any]:
        """The `progress` of a published metric event, at that event's own step."""
        total = self.total_steps
        return {
            "epoch": epoch, "step": step, "total_steps": total,
            "fraction": min(1.0, step / total) if total else None, "eta_seconds": self._eta(step),
        }

    def _write(self, pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Store the batch; on a database error keep it for the next try."""
        try:
            close_old_connections()
            stored = events_record(
                run_id=self.run_id, events=list(pending), lease_token=self.lease_token,
                run_fields=self._run_fields(),
            )
        except LeaseLost:
            logger.warning("run %s: lease lost; this worker stops writing", self.run_id)
            self.lease_lost = True
            pending.clear()
            return []
        except Exception as exc:
            logger.warning("run %s: could not store %d events (will retry): %s", self.run_id, len(pending), exc)
            connection.close()
            time.sleep(0.2)
            return []
        pending.clear()
        # Live metric events carry the progress, so a client needs no polling for total/ETA.
        return [
            {**event, "progress": self._progress_at(int(event["step"]), float(event["epoch"]))}
            if event.get("type") == "metric" else event
            for event in stored
        ]

    def _publish(self, events: list[dict[str, Any]]) -> None:
        """Send one group message with every new event; on failure drop it and pause a second."""
        now = time.monotonic()
        if now < self._publish_paused_until:
            return
        try:
            if self._layer is None:
                from channels.layers import get_channel_layer

                self._layer = get_channel_layer()
            assert self._loop is not None
            self._loop.run_until_complete(asyncio.wait_for(
                self._layer.group_send(run_group(self.run_id), {"type": GROUP_MESSAGE_TYPE, "events": events}),
                timeout=2.0,
            ))
            self.published_messages += 1
        except Exception as exc:
            logger.info("run %s: channel layer unavailable (%s); events stay in the database", self.run_id, exc)
            self._publish_paused_until = now + 1.0
            # A fresh layer object next time: the old one's connection pool may be bound to a dead socket.
            self._layer = None
            from channels.layers import channel_layers

            channel_layers.backends.pop("default", None)

    def _poll(self) -> None:
        try:
            close_old_connections()
            holds, cancel, drain = run_control_read(run_id=self.run_id, lease_token=self.lease_token)
        except Exception as exc:
            logger.warning("run %s: could not read the cancel flag: %s", self.run_id, exc)
            connection.close()
            return
        if not holds:
            self.lease_lost = True
        if cancel and not self.cancel_requested:
            self.cancel_observed_step = self.step
            self.cancel_requested = True
            self.emit({"type": "log", "level": "info", "step": self.step,
                       "message": f"cancel observed by the worker at step {self.step}; stopping"})
        if drain and not self.drain_requested:
            self.drain_requested = True
            self.emit({"type": "log", "level": "info", "step": self.step,
                       "message": f"the worker is shutting down at step {self.step}: the run checkpoints and "
                                  "is queued again for another worker"})

    def _heartbeat(self) -> None:
        try:
            close_old_connections()
            if not run_heartbeat(run_id=self.run_id, lease_token=self.lease_token, run_fields=self._run_fields()):
                self.lease_lost = True
        except Exception as exc:
            logger.warning("run %s: heartbeat failed: %s", self.run_id, exc)
            connection.close()


class RunCallbacks:
    """Trainer callbacks that report progress and checkpoints to a RunRecorder."""

    def __init__(self, recorder: RunRecorder, *, step_delay: float | None = None) -> None:
        self.recorder = recorder
        self.step_delay = float(conf.get("RUNS_STEP_DELAY_SECONDS")) if step_delay is None else step_delay
        self.checkpoints: list[tuple[int, Path]] = []

    def on_train_start(self, state: Any) -> None:
        """Report the planned total and where training (re)starts."""
        self.recorder.progress(step=state.step, epoch=state.epoch_progress, total_steps=state.total_steps)
        if state.step:
            self.recorder.emit({"type": "log", "level": "info", "step": int(state.step),
                                "message": f"resumed from the checkpoint at step {state.step}"})

    def on_train_batch_end(self, state: Any, loss: float | None) -> None:
        """Note the step (an attribute write); optionally slow down (demos, tests)."""
        self.recorder.progress(step=state.step, epoch=state.epoch_progress)
        if self.step_delay:
            time.sleep(self.step_delay)

    def on_validation_end(self, state: Any, metrics: Mapping[str, float]) -> None:
        """Nothing: the trainer logs validation metrics through the sink."""

    def on_checkpoint(self, state: Any, path: Path) -> None:
        """Record the finished checkpoint directory with the validation metrics of its weights."""
        self.checkpoints.append((int(state.step), Path(path)))
        self.recorder.emit({"type": "checkpoint", "step": int(state.step), "epoch": float(state.epoch_progress),
                            "name": Path(path).name, "path": str(path), "metrics": _checkpoint_metrics(Path(path))})

    def on_train_end(self, state: Any, result: Any) -> None:
        """Final progress."""
        self.recorder.progress(step=state.step, epoch=state.epoch_progress)

    def on_exception(self, state: Any, exc: BaseException) -> None:
        """Nothing: the task records the failure."""


def _checkpoint_metrics(path: Path) -> dict[str, float | None]:
    """The validation metrics stored with a checkpoint (numbers only; {} when it has none)."""
    import math

    try:
        from engine.train.checkpoint import checkpoint_metrics
    except ImportError:  # an engine without it: the state.json the trainer wrote holds them
        import json

        def checkpoint_metrics(folder: Path) -> dict[str, Any]:
            state = json.loads((Path(folder) / "state.json").read_text(encoding="utf-8"))
            return dict((state.get("trainer") or {}).get("last_val") or {})

    try:
        metrics = checkpoint_metrics(path)
    except (OSError, ValueError, KeyError) as exc:
        logger.warning("checkpoint %s: could not read its metrics: %s", path, exc)
        return {}
    out: dict[str, float | None] = {}
    for key, value in metrics.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[str(key)] = float(value) if math.isfinite(value) else None
    return out
