"""The front's own answers (webapp/serve.py) are the API's JSON error body, never nginx's HTML page.

A stack of its own, behind a real nginx: TRACE (refused by nginx before any location) is a JSON 405,
a request nginx cannot parse a JSON 400, a chunked body is read by the front and handed on whole
(201), or refused with a JSON 413 once it passes its limit; the HTTP server killed in the middle of
an upload is a JSON 502, and the partial file is gone once the server is back (the sweep at start
removes an upload file whose writer is gone).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.stack.stack import RedisServer, ServiceStack, proc_stat
from webapp.serve import front_available

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not front_available(), reason="needs nginx (the front): apt-get install nginx-light"),
]

MiB = 1 << 20
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def front(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not RedisServer.available():
        pytest.skip("needs Redis")
    with ServiceStack(tmp_path_factory.mktemp("front"), RedisServer.shared(db=5)) as stack:
        yield stack


def _raw(stack: ServiceStack, request: bytes) -> tuple[int, str, dict[str, Any]]:
    """Send `request` as is; (status, content type, JSON body) of the answer."""
    with socket.create_connection(("127.0.0.1", stack.port), timeout=30) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {line.split(":", 1)[0].lower(): line.split(":", 1)[1].strip() for line in lines[1:] if ":" in line}
    return int(lines[0].split()[1]), headers.get("content-type", ""), json.loads(body)


def test_trace_is_refused_with_the_json_error_body(front: ServiceStack) -> None:
    status, content_type, body = _raw(front, b"TRACE /api/graphs/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert (status, content_type) == (405, "application/json")
    assert body["error"]["code"] == "method_not_allowed"


def test_a_request_the_front_cannot_read_is_a_json_400(front: ServiceStack) -> None:
    status, content_type, body = _raw(front, b"GET /api/ HTTP/1.1\r\nHost: x\r\nBroken header line\r\n\r\n")
    assert (status, content_type) == (400, "application/json")
    assert body["error"]["code"] == "bad_request"


def _chunked_post(stack: ServiceStack, path: str, body: bytes, content_type: str) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=120)
    conn.putrequest("POST", path)
    conn.putheader("Content-Type", content_type)
    conn.putheader("Authorization", f"Bearer {stack.token('a')}")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    try:
        for start in range(0, len(body), 64 * 1024):
            piece = body[start : start + 64 * 1024]
            conn.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        conn.send(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused before the end
    answer = conn.getresponse()
    assert answer.getheader("Content-Type") == "application/json"
    data = json.loads(answer.read())
    conn.close()
    return answer.status, data


def test_a_chunked_body_is_taken_whole_and_one_over_its_limit_is_a_json_413(front: ServiceStack) -> None:
    from webapp.api.body_limit import limit_for

    spec = json.loads((EXAMPLES / "specs/iris_mlp.json").read_text())
    graph = json.dumps({"team": front.world["a"]["team"], "name": "sent chunked", "spec": spec}).encode()
    status, answer = _chunked_post(front, "/api/graphs/", graph, "application/json")
    assert status == 201, answer
    assert answer["name"] == "sent chunked"
    limit = limit_for(b"application/json")
    status, answer = _chunked_post(front, "/api/graphs/", b" " * (limit + MiB), "application/json")
    assert status == 413, answer
    assert answer["error"]["code"] == "payload_too_large" and str(limit) in answer["error"]["message"]


def _http_server_workers(stack: ServiceStack) -> list[int]:
    """granian's worker processes (children of a granian process) in the stack's web tier."""
    def cmdline(pid: int) -> str:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            return ""

    workers = []
    for pid in stack.web_pids():
        fields = proc_stat(pid)
        if fields is not None and "granian" in cmdline(int(fields[1])):
            workers.append(pid)
    return workers


def test_the_http_server_killed_mid_upload_is_a_json_502_and_leaves_no_partial_file(front: ServiceStack) -> None:
    uploads = front.tmp / "media" / "uploads"
    declared = 50 * MiB
    boundary = "netloom-cut"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"kind\"\r\n\r\ntensors\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cut.npz\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    conn = http.client.HTTPConnection("127.0.0.1", front.port, timeout=120)
    conn.putrequest("POST", "/api/datasets/upload/")
    conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
    conn.putheader("Content-Length", str(declared))
    conn.putheader("Authorization", f"Bearer {front.token('a')}")
    conn.endheaders()
    conn.send(head)
    sent = len(head)
    deadline = time.monotonic() + 60
    while not list(uploads.glob("*.part")) and time.monotonic() < deadline:
        conn.send(b"\0" * MiB)  # the file is open once its part begins arriving
        sent += MiB
    partial = list(uploads.glob("*.part"))
    assert partial, "the upload never reached the HTTP server"
    workers = _http_server_workers(front)
    assert workers, f"no granian worker among {front.web_pids()}"
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    answer: dict[str, Any] = {}

    def finish() -> None:  # the client keeps sending until the front answers
        try:
            while sent < declared - MiB and not answer:
                conn.send(b"\0" * MiB)
        except OSError:
            pass

    sender = threading.Thread(target=finish, daemon=True)
    sender.start()
    response = conn.getresponse()
    answer["status"] = response.status
    assert response.status == 502
    assert response.getheader("Content-Type") == "application/json"
    assert json.loads(response.read())["error"]["code"] == "bad_gateway"
    conn.close()
    # granian starts a new worker, whose sweep at start removes the file its killed writer left.
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):  # the HTTP server restarting
            if httpx.get(f"{front.base}/api/graphs/", headers={"Authorization": f"Bearer {front.token('a')}"},
                         timeout=10).status_code == 200 and not any(p.exists() for p in partial):
                break
        time.sleep(0.5)
    assert httpx.get(f"{front.base}/healthz", timeout=10).status_code == 200
    assert not [p for p in partial if p.exists()], "the partial upload stayed"

