"""`Client.run_events` against a real WebSocket server that drops the connection mid-run.

The server is a few lines of `websockets` playing the stream protocol (docs/subsystems/streams.md,
"The stream protocol"), so the resume logic is checked on a real socket without a whole stack.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from websockets.sync.server import ServerConnection, serve

from netloom import ApiError, Client

RUN = {
    "id": 7,
    "status": "running",
    "progress": {"epoch": 0, "step": 0, "total_steps": 5, "fraction": 0.0, "eta_seconds": None},
}


def metric(seq: int) -> dict[str, Any]:
    return {
        "type": "metric",
        "run": 7,
        "seq": seq,
        "step": seq,
        "epoch": seq / 5,
        "values": {"train/loss": 1 / seq},
    }


@contextmanager
def stream_server(
    handler: Callable[[ServerConnection, int, dict[str, list[str]]], None],
) -> Iterator[str]:
    calls: list[int] = []

    def handle(ws: ServerConnection) -> None:
        calls.append(1)
        query = parse_qs(urlsplit(ws.request.path).query)
        handler(ws, len(calls), query)

    with serve(handle, "127.0.0.1", 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.socket.getsockname()[1]}"
        finally:
            server.shutdown()
            thread.join(5)


def test_a_dropped_stream_resumes_from_the_last_seq_without_losing_or_repeating_events() -> None:
    asked: list[tuple[int, str, str]] = []

    def handler(ws: ServerConnection, call: int, query: dict[str, list[str]]) -> None:
        since = int(query["since"][0])
        asked.append((since, query["batch"][0], ws.request.headers.get("Authorization", "")))
        ws.send(json.dumps({"type": "state", "run": RUN, "seq": 3 if call == 1 else 5}))
        if call == 1:
            ws.send(json.dumps({"type": "batch", "events": [metric(1), metric(2)], "seq": 2}))
            ws.send(json.dumps(metric(3)))
            ws.close(1011, "worker restarted")  # a drop, not an answer
            return
        # Replay after `since`, with one event the client has already seen (a late live hint).
        ws.send(json.dumps({"type": "batch", "events": [metric(3), metric(4)], "seq": 4}))
        ws.send(json.dumps({"type": "replayed", "seq": 4}))
        ws.send(
            json.dumps(
                {
                    "type": "status",
                    "run": 7,
                    "seq": 5,
                    "status": "succeeded",
                    "final_metrics": {"test/accuracy": 0.9},
                }
            )
        )
        ws.recv()  # the client closes after the final status

    with stream_server(handler) as url:
        frames = list(Client(url, "nl_secret").run_events(7))
    assert [(f["type"], f.get("seq")) for f in frames] == [
        ("state", 3),
        ("metric", 1),
        ("metric", 2),
        ("metric", 3),
        ("state", 5),
        ("metric", 4),
        ("replayed", 4),
        ("status", 5),
    ]
    assert asked == [(0, "1", "Bearer nl_secret"), (3, "1", "Bearer nl_secret")]


def test_follow_false_stops_after_the_replay_and_a_refused_stream_is_an_api_error() -> None:
    def handler(ws: ServerConnection, call: int, query: dict[str, list[str]]) -> None:
        if call == 1:
            ws.send(json.dumps({"type": "state", "run": RUN, "seq": 1}))
            ws.send(
                json.dumps(
                    {"type": "log", "run": 7, "seq": 1, "level": "warning", "message": "slow"}
                )
            )
            ws.send(json.dumps({"type": "replayed", "seq": 1}))
            ws.recv()
        else:
            ws.close(4404, "not found")

    with stream_server(handler) as url:
        client = Client(url, "nl_secret")
        assert [e["message"] for e in client.run_logs(7)] == ["slow"]
        with pytest.raises(ApiError) as refused:
            list(client.run_events(7))
    assert refused.value.status == 404


def test_runs_logs_shows_the_lines_the_run_page_shows_one_checkpoint_line_per_epoch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    """A trained run stores status changes, metrics and checkpoints but often no `log` event: the
    page shows its statuses and checkpoints, and so does `netloom runs logs`."""
    from netloom.cli import main

    def event(seq: int, kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "run": 7, "seq": seq, **fields}

    stored = [
        event(1, "status", status="queued", detail="queued"),
        event(2, "status", status="running", detail="started on cpu-1", step=0),
        event(3, "metric", step=4, epoch=1.0, values={"val/loss": 0.5}),
        # The trainer keeps an improving epoch twice: `best`, then `epoch-0001` (same weights, step).
        event(4, "checkpoint", step=4, epoch=1.0, name="best", metrics={}),
        event(5, "checkpoint", step=4, epoch=1.0, name="epoch-0001", metrics={}),
        event(6, "checkpoint", step=8, epoch=2.0, name="epoch-0002", metrics={}),
        event(7, "status", status="succeeded", detail="finished", step=8),
    ]

    def handler(ws: ServerConnection, call: int, query: dict[str, list[str]]) -> None:
        ws.send(json.dumps({"type": "state", "run": {**RUN, "status": "succeeded"}, "seq": 7}))
        ws.send(json.dumps({"type": "batch", "events": stored, "seq": 7}))
        ws.send(json.dumps({"type": "replayed", "seq": 7}))
        ws.recv()

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("NETLOOM_CONFIG", raising=False)
    with stream_server(handler) as url:
        monkeypatch.setenv("NETLOOM_URL", url)
        monkeypatch.setenv("NETLOOM_TOKEN", "nl_secret")
        assert main(["runs", "logs", "7"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "[status] queued: queued",
        "[status] running: started on cpu-1",
        "[info] step 4: checkpoint epoch-0001 (also kept as best)",
        "[info] step 8: checkpoint epoch-0002",
        "[status] succeeded: finished",
    ]
