"""The run stream (ws/runs/<id>/): its frames, following a run to its end, its log lines."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any, cast
from urllib.parse import urlencode, urlsplit, urlunsplit

from netloom.api_types import CheckpointEvent, LogEvent, RunStreamFrame, StatusEvent
from netloom.errors import ApiError, ConnectionFailed
from netloom.resources.transport import Transport

FINAL_STATUSES = frozenset({"succeeded", "failed", "cancelled"})
# Close codes of ws/runs/<id>/ that no reconnect can cure.
_CLOSE_ERRORS = {
    4401: (401, "not_authenticated", "the token was refused by the stream"),
    4404: (404, "not_found", "no such run among your teams"),
}


class StreamMixin(Transport):
    """A run's live stream, resumed by sequence number after a dropped connection."""

    def stream_url(self, run_id: int, since: int = 0) -> str:
        parts = urlsplit(self.url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        query = urlencode({"since": since, "batch": 1})
        return urlunsplit((scheme, parts.netloc, f"{parts.path}/ws/runs/{run_id}/", query, ""))

    def run_events(
        self,
        run_id: int,
        *,
        since: int = 0,
        follow: bool = True,
        retries: int = 20,
        open_timeout: float = 10.0,
    ) -> Iterator[RunStreamFrame]:
        """The run's stream frames: `state`, the stored events after `since`, `replayed`, then live ones.

        Batches are unpacked (one event per item). After a dropped connection it reconnects with
        `?since=<last seq seen>`, so no event is lost or repeated (each reconnect starts with a new
        `state`). `follow=False` stops at `replayed`; otherwise it ends after the run's final status.
        """
        from websockets.exceptions import ConnectionClosed, InvalidStatus
        from websockets.sync.client import connect

        last_seq, failures, run_final = since, 0, False
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        while True:
            try:
                with connect(
                    self.stream_url(run_id, last_seq),
                    additional_headers=headers,
                    open_timeout=open_timeout,
                    max_size=None,
                ) as ws:
                    for text in ws:
                        frame = json.loads(text)
                        events = frame["events"] if frame.get("type") == "batch" else [frame]
                        for event in events:
                            kind = event.get("type")
                            if kind == "state":
                                run_final = event["run"]["status"] in FINAL_STATUSES
                            elif kind != "replayed":
                                if event["seq"] <= last_seq:
                                    continue  # already yielded before a reconnect
                                last_seq = event["seq"]
                            failures = 0
                            yield cast(RunStreamFrame, event)
                            if kind == "status" and event["status"] in FINAL_STATUSES and follow:
                                return
                            if kind == "replayed" and (not follow or run_final):
                                return
            except ConnectionClosed as exc:
                code = exc.rcvd.code if exc.rcvd is not None else None
                if code in _CLOSE_ERRORS:
                    raise ApiError(*_CLOSE_ERRORS[code]) from None
                reason: Exception = exc
            except InvalidStatus as exc:
                status = exc.response.status_code
                if status in (401, 403, 404):
                    raise ApiError(
                        status,
                        "stream_refused",
                        f"the stream refused the connection (HTTP {status})",
                    ) from None
                reason = exc
            except (OSError, TimeoutError) as exc:
                reason = exc
            failures += 1
            if failures > retries:
                raise ConnectionFailed(
                    f"the stream of run {run_id} dropped and could not be resumed: {reason}"
                )
            time.sleep(min(0.2 * 2 ** (failures - 1), 5.0))

    def run_follow(
        self, run_id: int, *, on_event: Callable[[RunStreamFrame], None] | None = None
    ) -> StatusEvent:
        """Follow the stream until the run ends; its final status event."""
        final: StatusEvent | None = None
        for event in self.run_events(run_id):
            if on_event:
                on_event(event)
            if event["type"] == "status" and event["status"] in FINAL_STATUSES:
                final = cast(StatusEvent, event)
        if final is None:  # joined after the end and since was past it: the run says how it ended
            run = self.run(run_id)
            final = cast(
                StatusEvent,
                {
                    "type": "status",
                    "run": run_id,
                    "seq": run.get("last_seq", 0),
                    "status": run["status"],
                    "detail": "",
                    "error": run.get("error") or None,
                    "final_metrics": run.get("final_metrics") or None,
                },
            )
        return final

    def run_logs(self, run_id: int) -> list[LogEvent | StatusEvent | CheckpointEvent]:
        """The run's log as its page shows it: status changes, log lines and checkpoints, from
        its stream's replay. A `best` checkpoint written with an epoch's at the same step is one
        entry, the epoch's, with `also: ["best"]` (the same weights kept twice)."""
        lines: list[Any] = []
        for event in self.run_events(run_id, follow=False):
            if event["type"] not in ("status", "log", "checkpoint"):
                continue
            previous = lines[-1] if lines else None
            if (
                event["type"] == "checkpoint"
                and previous is not None
                and previous["type"] == "checkpoint"
                and previous["step"] == event["step"]
            ):
                pair: list[dict[str, Any]] = [dict(previous), dict(event)]
                first, second = pair if previous["name"] != "best" else pair[::-1]
                lines[-1] = {**first, "also": [*(first.get("also") or []), second["name"]]}
                continue
            lines.append(dict(event))
        return lines
