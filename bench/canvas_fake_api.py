"""A stand-in for the Django API, for the canvas benchmark: serves frontend/dist and an in-memory API.

Validation and code generation call the real engine, so the canvas sees real reports; only
accounts and storage are faked. The e2e tests never use this: they run the real server.
"""

from __future__ import annotations

import json
import mimetypes
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from engine.codegen import codegen
from engine.ops import catalog_json
from engine.validate import validate

DIST = Path(__file__).resolve().parents[1] / "frontend" / "dist"


class FakeApi:
    """In-memory users, graphs and revisions behind the API paths the canvas uses."""

    def __init__(self) -> None:
        self.user = {
            "id": 1,
            "username": "bench",
            "teams": [{"id": 1, "name": "Bench", "role": "admin"}],
        }
        self.graphs: dict[int, dict[str, Any]] = {}
        self.revisions: dict[int, list[dict[str, Any]]] = {}
        self.lock = threading.Lock()

    def add_graph(self, name: str, spec: dict[str, Any] | None) -> int:
        """Create a graph (with revision 1 when a spec is given); returns its id."""
        with self.lock:
            gid = len(self.graphs) + 1
            self.graphs[gid] = {
                "id": gid,
                "team": 1,
                "name": name,
                "updated_at": "2026-01-01T00:00:00Z",
            }
            self.revisions[gid] = []
        if spec is not None:
            self.add_revision(gid, spec)
        return gid

    def add_revision(self, gid: int, spec: dict[str, Any]) -> dict[str, Any]:
        """Store a new revision of graph `gid`."""
        with self.lock:
            number = len(self.revisions[gid]) + 1
            rev = {
                "number": number,
                "created_at": "2026-01-01T00:00:00Z",
                "created_by": {"id": 1, "username": "bench"},
                "spec_hash": str(number),
                "spec": spec,
            }
            self.revisions[gid].append(rev)
            return rev

    def graph_json(self, gid: int) -> dict[str, Any]:
        """The graph as the API lists it."""
        return {**self.graphs[gid], "latest_revision": len(self.revisions[gid]) or None}

    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """Route one API call; returns (status, JSON body)."""
        parts = [p for p in path.split("?")[0].split("/") if p][1:]  # drop "api"
        if parts[:2] == ["auth", "csrf"] or parts[:2] == ["auth", "logout"]:
            return 200, {}
        if parts[:2] == ["auth", "me"] or parts[:2] == ["auth", "login"]:
            return 200, self.user
        if parts == ["ops"]:
            return 200, catalog_json()
        if parts == ["graphs", "validate"]:
            return 200, validate(body["spec"]).to_json()
        if parts == ["graphs", "codegen"]:
            report = validate(body["spec"])
            if not report.valid:
                return 400, {"error": {"code": "invalid_spec", "message": "invalid", "fields": {}}}
            return 200, {"source": codegen(body["spec"])}
        if parts == ["graphs"]:
            if method == "POST":
                return 201, self.graph_json(self.add_graph(body["name"], body.get("spec")))
            return 200, {
                "count": len(self.graphs),
                "next": None,
                "previous": None,
                "results": [self.graph_json(g) for g in self.graphs],
            }
        if (
            len(parts) >= 2
            and parts[0] == "graphs"
            and parts[1].isdigit()
            and int(parts[1]) in self.graphs
        ):
            gid = int(parts[1])
            if len(parts) == 2:
                return 200, self.graph_json(gid)
            if parts[2] == "revisions" and len(parts) == 3:
                if method == "POST":
                    return 201, self.add_revision(gid, body["spec"])
                return 200, [
                    {k: v for k, v in r.items() if k != "spec"}
                    for r in reversed(self.revisions[gid])
                ]
            if parts[2] == "revisions" and len(parts) == 4:
                rev = self.revisions[gid][int(parts[3]) - 1]
                if method == "PATCH":
                    rev["spec"] = {
                        **rev["spec"],
                        **{k: v for k, v in body.items() if k in ("layout", "ui")},
                    }
                return 200, rev
        return 404, {"error": {"code": "not_found", "message": "Not found.", "fields": None}}


def serve(api: FakeApi, port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Start the fake server in a thread; returns (server, base URL)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _api(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            status, data = api.handle(method, self.path, body)
            self._send(status, json.dumps(data).encode(), "application/json")

        def do_GET(self) -> None:  # noqa: N802
            if self.path.startswith("/api/"):
                return self._api("GET")
            path = self.path.split("?")[0]
            rel = path.removeprefix("/app/").removeprefix("/app")
            file = DIST / rel
            if not rel or not file.is_file():
                file = DIST / "index.html"  # deep links get the app shell
            ctype = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
            self._send(HTTPStatus.OK, file.read_bytes(), ctype)

        def do_POST(self) -> None:  # noqa: N802
            self._api("POST")

        def do_PATCH(self) -> None:  # noqa: N802
            self._api("PATCH")

        def do_DELETE(self) -> None:  # noqa: N802
            self._api("DELETE")

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
