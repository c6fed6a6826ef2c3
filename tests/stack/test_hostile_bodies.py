"""Request bodies cannot exhaust the web process: oversized bodies are refused, large uploads stream.

Against the live stack (the web tier of webapp/serve.py + worker). The web processes' peak resident memory
is reset before each request (`/proc/<pid>/clear_refs`) and read after it (`VmHWM`), so each figure is what that
one request cost.
"""

from __future__ import annotations

import http.client
import json
import select
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.stack.stack import ServiceStack
from webapp.serve import front_available

pytestmark = pytest.mark.slow

MiB = 1 << 20


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


class PeakMemory:
    """How much the web tier's processes' resident memory rose, together, above their level at the start."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids

    def __enter__(self) -> PeakMemory:
        try:
            for pid in self.pids:
                Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to VmRSS
        except OSError:
            pytest.skip("needs /proc/<pid>/clear_refs (Linux, same user)")
        self.start = {pid: _rss_kib(pid) for pid in self.pids}
        return self

    def __exit__(self, *exc: Any) -> None:
        self.growth_mib = sum(_peak_kib(pid) - start for pid, start in self.start.items()) / 1024


def _send(
    stack: ServiceStack,
    path: str,
    chunks: Iterator[bytes],
    *,
    content_type: str,
    length: int | None,
    token: str | None = None,
) -> tuple[int, dict[str, Any]]:
    """POST a body made of `chunks` (with Content-Length, or chunked when `length` is None)."""
    conn = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=120)
    headers = {"Content-Type": content_type}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if length is not None:
        headers["Content-Length"] = str(length)
    conn.putrequest("POST", path)
    for name, value in headers.items():
        conn.putheader(name, value)
    if length is None:
        conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    # Like a careful client, stop sending once the server has answered (it may refuse early).
    try:
        for chunk in chunks:
            if select.select([conn.sock], [], [], 0)[0]:
                break
            if length is None:
                conn.send(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            else:
                conn.send(chunk)
        else:
            if length is None:
                conn.send(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server answered and closed while the body was still coming
    answer = conn.getresponse()
    body = answer.read()
    conn.close()
    return answer.status, json.loads(body) if body else {}


def _zeros(total: int, chunk: int = MiB) -> Iterator[bytes]:
    block = b"0" * chunk
    sent = 0
    while sent < total:
        n = min(chunk, total - sent)
        yield block[:n]
        sent += n


GiB = 1024 * MiB


@pytest.mark.parametrize(
    ("who", "path", "content_type", "chunked"),
    [
        (None, "/api/auth/token/", "application/json", False),
        ("a", "/api/datasets/upload/", "multipart/form-data; boundary=x", False),
        ("a", "/api/graphs/", "application/json", True),
        ("a", "/api/datasets/upload/", "multipart/form-data; boundary=x", True),
    ],
    ids=["anonymous-json", "signed-in-multipart", "signed-in-chunked", "signed-in-chunked-multipart"],
)
def test_a_gibibyte_body_is_refused_without_the_web_process_growing(
    stack: ServiceStack, who: str | None, path: str, content_type: str, chunked: bool
) -> None:
    assert stack.web is not None
    token = stack.token(who) if who else None
    with PeakMemory(stack.web_pids()) as peak:
        status, body = _send(
            stack, path, _zeros(GiB), content_type=content_type,
            length=None if chunked else GiB, token=token,
        )
    print(f"\n{path} ({'chunked' if chunked else 'Content-Length'}): {status}, "
          f"web process +{peak.growth_mib:.1f} MiB")
    if chunked and not front_available():  # no length to judge it by: refused before the first byte
        assert status == 411, body
        assert body["error"]["code"] == "length_required" and "Content-Length" in body["error"]["message"]
    else:  # behind the front a chunked body is counted as it arrives (webapp/serve.py)
        assert status == 413, body
        assert body["error"]["code"] == "payload_too_large" and "limit" in body["error"]["message"]
    assert peak.growth_mib < 50, f"the web process grew by {peak.growth_mib:.0f} MiB"


def test_a_small_chunked_body_is_taken_behind_the_front_and_refused_naming_content_length_without(
    stack: ServiceStack,
) -> None:
    """Django and DRF read a body without a Content-Length as empty: without the 411 the user
    would read "team: This field is required." about a body that held one. Behind the front the
    body is read whole there and handed on with its length, so it is taken."""
    spec = json.loads((Path(__file__).resolve().parents[2] / "examples/specs/iris_mlp.json").read_text())
    body = json.dumps({"team": stack.world["a"]["team"], "name": "sent whole", "spec": spec}).encode()
    status, answer = _send(
        stack, "/api/graphs/", iter([body[i : i + 97] for i in range(0, len(body), 97)]),
        content_type="application/json", length=None, token=stack.token("a"),
    )
    if front_available():
        assert status == 201, answer
        assert answer["name"] == "sent whole"
    else:
        assert status == 411, answer
        assert answer["error"]["code"] == "length_required" and "Content-Length" in answer["error"]["message"]
    status, answer = _send(
        stack, "/api/graphs/", iter([body]), content_type="application/json", length=len(body),
        token=stack.token("a"),
    )
    assert status == 201, answer
    assert answer["name"] == "sent whole"
    assert [(n["id"], n["op"]) for n in answer["latest"]["spec"]["nodes"]] == [
        (n["id"], n["op"]) for n in spec["nodes"]
    ]


def test_a_200_mb_upload_streams_to_disk_and_is_processed(stack: ServiceStack, tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    # 200 MB of float32 samples: 400,000 rows of 125 features, two classes.
    rows = 400_000
    x = np.random.default_rng(0).standard_normal((rows, 125), dtype=np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    path = tmp_path / "big.safetensors"
    save_file({"x": x, "y": y}, str(path))
    del x, y
    size = path.stat().st_size
    assert 200e6 <= size < 210e6
    boundary = f"----netloom{uuid.uuid4().hex}"
    head = "".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
        for k, v in {"team": stack.world["a"]["team"], "kind": "tensors", "name": "big"}.items()
    ).encode() + (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.safetensors"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def body() -> Iterator[bytes]:
        yield head
        with open(path, "rb") as f:
            while chunk := f.read(MiB):
                yield chunk
        yield tail

    # A small upload first loads the code the big one runs (the first request imports the
    # URLconf, the engine and torch: ~200 MB that any first request costs, whatever its size).
    warm = tmp_path / "warm.safetensors"
    save_file({"x": np.zeros((8, 2), np.float32), "y": np.arange(8) % 2}, str(warm))
    first = stack.api("a").post_multipart(
        "/api/datasets/upload/", {"team": stack.world["a"]["team"], "kind": "tensors"},
        {"file": ("warm.safetensors", warm.read_bytes())},
    )
    assert first.status_code in (201, 202), first.text
    assert stack.web is not None
    with PeakMemory(stack.web_pids()) as peak:
        status, answer = _send(
            stack, "/api/datasets/upload/", body(),
            content_type=f"multipart/form-data; boundary={boundary}",
            length=len(head) + size + len(tail), token=stack.token("a"),
        )
    print(f"\n200 MB upload: {status}, web process +{peak.growth_mib:.1f} MiB")
    assert status in (201, 202), answer
    assert peak.growth_mib < 100, f"the web process grew by {peak.growth_mib:.0f} MiB"
    deadline = time.monotonic() + 180
    dataset = answer
    while dataset["status"] == "processing" and time.monotonic() < deadline:
        time.sleep(1)
        dataset = stack.api("a").get(f"/api/datasets/{answer['id']}/").json()
    assert dataset["status"] == "ready", dataset
    assert dataset["summary"]["rows"]["total"] == rows


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("multipart/form-data", b"no boundary at all"),
        ("multipart/form-data; boundary=", b"--\r\n"),
        ("multipart/form-data; boundary=x", b"--x\r\nContent-Disposition: form-data; name=\"file\""),
        ("multipart/form-data; boundary=x", b"\x00\xff" * 64),
        ("multipart/form-data; boundary=" + "b" * 5000, b"--" + b"b" * 5000 + b"\r\n"),
    ],
    ids=["no-boundary", "empty-boundary", "cut-short", "binary-noise", "huge-boundary"],
)
def test_malformed_multipart_gets_a_4xx_in_the_error_envelope(
    stack: ServiceStack, content_type: str, body: bytes
) -> None:
    status, answer = _send(
        stack, "/api/datasets/upload/", iter([body]), content_type=content_type,
        length=len(body), token=stack.token("a"),
    )
    # 400 for a body that does not parse; 415 for a boundary longer than RFC 2046 allows.
    assert status in (400, 415), answer
    assert set(answer["error"]) >= {"code", "message", "fields"} and answer["error"]["message"]


def _chain_spec(nodes: int) -> dict[str, Any]:
    """A spec of `nodes` ReLUs in a chain (the shape of the campaign's 100,000-node spec)."""
    chain = [{"id": f"r{i}", "op": "ReLU", "inputs": [f"r{i - 1}" if i else "x"]} for i in range(nodes)]
    return {"version": 1, "inputs": [{"id": "x", "shape": [4]}], "nodes": chain, "outputs": [f"r{nodes - 1}"]}


@pytest.mark.parametrize(
    ("nodes", "status", "code"),
    [(100_000, 413, "payload_too_large"), (70_000, 400, "too_many_nodes")],
    ids=["100k-nodes-over-the-size-limit", "70k-nodes-under-it"],
)
def test_a_spec_past_the_graph_limits_is_refused_before_it_is_stored_or_built(
    stack: ServiceStack, nodes: int, status: int, code: str
) -> None:
    api = stack.api("a")
    before = api.get("/api/graphs/?page_size=500").json()["count"]
    body = json.dumps({"team": stack.world["a"]["team"], "name": "huge", "spec": _chain_spec(nodes)}).encode()
    api.post("/api/graphs/validate/", json={"spec": _chain_spec(2)})  # the first request loads the code
    assert stack.web is not None
    with PeakMemory(stack.web_pids()) as peak:
        answered, answer = _send(stack, "/api/graphs/", iter([body]), content_type="application/json",
                                 length=len(body), token=stack.token("a"))
    print(f"\n{nodes} nodes ({len(body) / MiB:.1f} MiB): {answered}, web process +{peak.growth_mib:.1f} MiB")
    assert answered == status, answer
    assert answer["error"]["code"] == code
    assert "limit" in answer["error"]["message"]
    if code == "too_many_nodes":
        assert answer["error"]["fields"] == {"spec.nodes": [answer["error"]["message"]]}
        assert "the limit is 500" in answer["error"]["message"]
    assert api.get("/api/graphs/?page_size=500").json()["count"] == before
    assert peak.growth_mib < 100, f"the web process grew by {peak.growth_mib:.0f} MiB"
