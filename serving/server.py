"""The local multi-model server: every registry version an alias names, under OIP v2, on kserve.

kserve's ModelServer answers the protocol (every infer request on its own route, health,
Prometheus /metrics); this module adds what a team-hosted registry needs in front of it, as one
ASGI middleware that decides who may call what and then hands the request to kserve:

- the caller's API token, and 404 (not 403) for a model of another team;
- served names `<model id>-<slug>` resolved by the leading id (a stale slug still resolves);
- `/v2/models/<served>/infer` -> the version the default alias (`production`) names,
  `/v2/models/<served>/versions/<n>/infer` -> version n when some alias names it, forwarded to
  kserve's infer route under the version's inner name `<model id>@<n>`;
- the caller's API token or the browser's signed-in session (same-origin only), and 404 (not 403)
  for a model of another team;
- admission: 429 with Retry-After, before forwarding, when the version's batch queue is full;
- metadata under the served name and version (kserve's metadata route cannot say either, see
  VersionModel.metadata), and `/v2/models/<served>/stats` (a recent window).

Which versions to serve and who may call them come from a `Directory` (serving.registry_link
reads the registry through Django; nothing else here knows Django). A poll every
SERVING_POLL_S seconds learns alias moves: the new version is loaded first, then the alias
switches; the old one keeps answering the requests it already took and is dropped after
SERVING_RETIRE_S seconds. A revoked token, or a user's changed teams, is announced the same way
(`watch_access`): the kept check of that user's credentials is dropped at once.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import orjson

from .batching import Overloaded
from .model import VersionModel, batch_settings_from_env, configure_torch
from .stats import WINDOW_S

log = logging.getLogger("netloom.serving")

DEFAULT_ALIAS = os.environ.get("SERVING_DEFAULT_ALIAS", "production")
# Largest infer body (bytes): a batch of encoded images fits; the front's own limit is larger.
MAX_BODY = int(os.environ.get("SERVING_MAX_BODY", str(64 * 1024 * 1024)))
RETRY_AFTER_S = 1
# How long a token's or session's check is kept. A revocation or a change of the user's teams that
# the directory announces (watch_access) drops it at once; this bounds a lost announcement.
IDENTITY_TTL_S = 5.0
ROUTE = re.compile(r"^/v2/models/(?P<served>[^/]+)(?:/versions/(?P<version>[^/]+))?(?P<rest>/[a-z]+)?/?$")


@dataclass(frozen=True)
class Entry:
    """A registered model as the server needs it: its team, served name, aliases and folders."""

    model_id: int
    team_id: int
    served_name: str
    aliases: dict[str, int]
    folders: dict[int, str] = field(default_factory=dict)  # aliased version number -> folder


@dataclass(frozen=True)
class Identity:
    user_id: int
    team_ids: frozenset[int]


class Directory(Protocol):
    def snapshot(self) -> dict[int, Entry]:
        """Every model some alias names a version of."""

    def authenticate(self, token: str) -> Identity | None:
        """Whose token this is (active, unexpired, unrevoked) and the teams it may call; None otherwise."""

    # Optional: `wait_for_change(timeout) -> bool`, returning early when an alias moved;
    # `watch_access(on_change, stop)`, calling `on_change(user_id)` when a user's access changed (a
    # token revoked, a team left) until `stop` is set;
    # `session_cookie` (a cookie name) and `authenticate_session(key) -> Identity | None`: the
    # browser's signed-in session, for a request without a token; `trusted_origins`: other
    # Origins a session request may come from.


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
    return status, orjson.dumps(body), {"content-type": "application/json", **(headers or {})}


class Served:
    """What is loaded now, and the registry as last read: switched whole, after loading."""

    def __init__(self, directory: Directory, register: Any, unregister: Any) -> None:
        self.directory = directory
        self.entries: dict[int, Entry] = {}
        self.models: dict[tuple[int, int], VersionModel] = {}
        self._unneeded_since: dict[tuple[int, int], float] = {}
        self._register, self._unregister = register, unregister
        self.settings = batch_settings_from_env()
        self.retire_s = float(os.environ.get("SERVING_RETIRE_S", "30"))
        self.ready = threading.Event()
        # user id -> when their access last changed (time.monotonic()), written by the directory's
        # watcher thread, read by the event loop: a kept identity checked before then is stale.
        self._access_changed: dict[int, float] = {}
        self._access_lock = threading.Lock()

    def access_changed(self, user_id: int) -> None:
        """A user's token was revoked or their teams changed: their kept identities are stale."""
        now = time.monotonic()
        with self._access_lock:
            if len(self._access_changed) > 1000:  # older records outlive every kept identity
                self._access_changed = {u: t for u, t in self._access_changed.items() if now - t < IDENTITY_TTL_S}
            self._access_changed[user_id] = now

    def access_changed_since(self, user_id: int, since: float) -> bool:
        changed = self._access_changed.get(user_id)
        return changed is not None and changed >= since

    def refresh(self) -> None:
        """Read the registry; load the versions newly named; switch; retire the unnamed."""
        entries = self.directory.snapshot()
        loaded = False
        for entry in entries.values():
            for number, folder in entry.folders.items():
                key = (entry.model_id, number)
                if key in self.models:
                    continue
                model = VersionModel(f"{entry.model_id}@{number}", folder, served_name=entry.served_name,
                                     version=str(number), settings=self.settings)
                try:
                    model.load()
                except Exception:  # a broken folder must not stop the others
                    log.exception("could not load version %s of model %s from %s", number, entry.model_id, folder)
                    continue
                self._register(model)
                self.models[key] = model
                loaded = True
        if loaded:
            settle_heap()
        self.entries = entries  # the switch: requests resolve against the new aliases from here
        wanted = {(e.model_id, n) for e in entries.values() for n in e.folders}
        now = time.monotonic()
        for key in list(self.models):
            if key in wanted:
                self._unneeded_since.pop(key, None)
                continue
            since = self._unneeded_since.setdefault(key, now)
            if now - since >= self.retire_s:
                model = self.models.pop(key)
                self._unneeded_since.pop(key, None)
                self._unregister(model.name)
                model.stop()
        self.ready.set()

    def poll_forever(self, every_s: float, stop: threading.Event) -> None:
        """Read the registry every `every_s` s, or at once when the directory hears of a move."""
        wait = getattr(self.directory, "wait_for_change", None)
        while not stop.is_set():
            try:
                self.refresh()
            except Exception:
                log.exception("reading the registry failed; serving what is loaded")
            if wait is not None:
                wait(every_s)
            else:
                stop.wait(every_s)


class Front:
    """ASGI middleware in front of kserve's app: tokens, names and versions, admission (429),
    metadata, stats. Infer requests go on to kserve's own route."""

    TOKEN_TTL_S = IDENTITY_TTL_S

    def __init__(self, app: Any, served: Served) -> None:
        self.app = app
        self.served = served
        # (kind, credential) -> (kept until, checked at, identity), times of time.monotonic()
        self._identities: dict[tuple[str, str], tuple[float, float, Identity | None]] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path: str = scope["path"]
        if path in ("/v2/health/live", "/v2/health/ready", "/metrics"):
            if path == "/v2/health/ready" and not self.served.ready.is_set():
                return await self._send(send, *_json(503, {"error": "the registry has not been read yet"}))
            return await self.app(scope, receive, send)
        match = ROUTE.match(path)
        if match is None:
            return await self._send(send, *_json(404, {"error": f"no route {path}"}))
        outcome = await self._resolve(scope, match)
        if isinstance(outcome[0], int):  # (status, body, headers): refused
            return await self._send(send, *outcome)
        model, rest, entry = outcome
        method = scope["method"]
        if rest == "/infer" and method == "POST":
            return await self._forward_infer(scope, receive, send, model)
        if method != "GET":
            return await self._send(send, *_json(405, {"error": f"{method} is not allowed on {path}"}))
        if rest is None:
            return await self._send(send, *_json(200, model.metadata()))
        if rest == "/ready":
            return await self._send(send, *_json(200, {"name": entry.served_name, "ready": bool(model.ready)}))
        if rest == "/stats":
            versions = {str(n): m.stats.window() for (mid, n), m in sorted(self.served.models.items())
                        if mid == entry.model_id}
            return await self._send(send, *_json(200, {"versions": versions, "window_s": WINDOW_S}))
        return await self._send(send, *_json(404, {"error": f"no route {path}"}))

    async def _forward_infer(self, scope: dict[str, Any], receive: Any, send: Any, model: VersionModel) -> None:
        """Admission, then kserve's own infer route under the version's inner name.

        The front refuses what it can refuse without reading the body: a body past MAX_BODY (by
        its Content-Length) and a version whose batch queue is full (429, Retry-After), so a
        refused request costs no parsing. Everything else (the body, its validation, the Model's
        predict, the answer) is kserve's."""
        length = _content_length(scope)
        if length is not None and length > MAX_BODY:
            return await self._send(send, *_json(413, {"error": f"the body is larger than {MAX_BODY} bytes"}))
        batcher = model.batcher
        if batcher is not None and batcher.full:
            return await self._send(send, *_json(
                429, {"error": f"{batcher.queue_depth} rows are waiting for version {model.version_label} of "
                               f"{model.served_name}; the queue is full"},
                {"retry-after": str(RETRY_AFTER_S)}))
        inner = f"/v2/models/{model.name}/infer"
        return await self.app(dict(scope, path=inner, raw_path=inner.encode()), receive, send)

    async def _resolve(self, scope: dict[str, Any], match: re.Match[str]) -> Any:
        token = _bearer(scope)
        directory = self.served.directory
        cookie = getattr(directory, "session_cookie", None)
        session_key = _cookie(scope, cookie) if token is None and cookie else None
        if token is not None:
            identity = await self._identity("token", token)
            if identity is None:
                return _json(401, {"error": "Invalid, expired or revoked token."},
                             {"www-authenticate": 'Bearer realm="api"'})
        elif session_key is not None:
            # The session cookie is ambient: a browser sends it with a form another site posts
            # here too. Inference only reads, so it needs no CSRF token, but a cross-site page
            # must not spend the user's quota nor probe which models their teams serve: a
            # browser's cross-site request carries an Origin naming the other site, so an Origin
            # must name this host (the front passes the browser's Host on). A request without
            # Origin is no cross-site browser request (browsers send it on every cross-site POST
            # and every fetch() but a same-origin GET). A token is no ambient credential: no check.
            if not _same_origin(scope, getattr(directory, "trusted_origins", ())):
                return _json(403, {"error": "a cross-site request may not use your session: call from "
                                            "this site, or send an API token (Authorization: Bearer <token>)"})
            identity = await self._identity("session", session_key)
            if identity is None:
                return _json(401, {"error": "Your session has ended: sign in again, or send an API token."},
                             {"www-authenticate": 'Bearer realm="api"'})
        else:
            return _json(401, {"error": "send your API token (Authorization: Bearer <token>) or sign in"},
                         {"www-authenticate": 'Bearer realm="api"'})
        served, version, rest = match["served"], match["version"], match["rest"]
        lead = re.match(r"^(\d+)", served)
        entry = self.served.entries.get(int(lead[1])) if lead else None
        if entry is None or entry.team_id not in identity.team_ids:
            return _json(404, {"error": f"no served model {served!r}: no such model of your teams, or no "
                                        "alias names a version of it"})
        if version is None and rest == "/stats":
            number = next(iter(entry.folders), None)
        elif version is None:
            number = entry.aliases.get(DEFAULT_ALIAS)
            if number is None:
                named = ", ".join(f"{a} -> {n}" for a, n in sorted(entry.aliases.items()))
                return _json(404, {"error": f"model {entry.served_name} has no {DEFAULT_ALIAS!r} alias "
                                            f"(aliases: {named}); call /v2/models/{entry.served_name}/versions/<n>/infer"})
        else:
            if not version.isdigit():
                return _json(404, {"error": f"version {version!r} is not a version number"})
            number = int(version)
            if number not in entry.folders:
                return _json(404, {"error": f"version {number} of {entry.served_name} is not served: no alias "
                                            f"names it (served: {', '.join(map(str, sorted(entry.folders)))})"})
        model = self.served.models.get((entry.model_id, number)) if number is not None else None
        if model is None:
            return _json(503, {"error": f"version {number} of {entry.served_name} is loading"}, {"retry-after": "1"})
        return model, rest, entry

    async def _identity(self, kind: str, credential: str) -> Identity | None:
        """Whose token or session this is, kept TOKEN_TTL_S: dropped at once when the directory
        announces that the user's access changed (a revoked token, a team left), else within
        that (a lost announcement, a signed-out session)."""
        now = time.monotonic()
        kept = self._identities.get((kind, credential))
        if kept is not None and kept[0] > now:
            until, checked, identity = kept
            if identity is None or not self.served.access_changed_since(identity.user_id, checked):
                return identity
        directory = self.served.directory
        check = directory.authenticate if kind == "token" else directory.authenticate_session  # type: ignore[attr-defined]
        # `now` is taken before the check: an announcement that arrives while it reads the
        # registry makes the next request check again.
        identity = await asyncio.to_thread(check, credential)
        if len(self._identities) > 10_000:
            self._identities.clear()
        self._identities[(kind, credential)] = (now + self.TOKEN_TTL_S, now, identity)
        return identity

    @staticmethod
    async def _send(send: Any, status: int, body: bytes, headers: dict[str, str]) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(k.encode(), v.encode()) for k, v in headers.items()]})
        await send({"type": "http.response.body", "body": body})


def _content_length(scope: dict[str, Any]) -> int | None:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def _bearer(scope: dict[str, Any]) -> str | None:
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            parts = value.decode("latin-1").split()
            if len(parts) == 2 and parts[0].lower() == "bearer":
                return parts[1]
            return None
    return None


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


def _cookie(scope: dict[str, Any], name: str) -> str | None:
    """The value of cookie `name` (a malformed pair is skipped, as Django's parse_cookie does)."""
    for key, value in scope.get("headers", []):
        if key != b"cookie":
            continue
        for pair in value.decode("latin-1").split(";"):
            found, sep, found_value = pair.partition("=")
            if sep and found.strip() == name and found_value.strip():
                return found_value.strip().strip('"')
    return None


def _same_origin(scope: dict[str, Any], trusted: Any = ()) -> bool:
    """Whether the request has no Origin, or one naming the host it was sent to (scheme aside:
    the front may end TLS), or one of `trusted` (Django's CSRF_TRUSTED_ORIGINS, where a proxy
    before the front changes the Host: `https://*.example.org` names the subdomains too)."""
    origin = _header(scope, b"origin")
    if origin is None:
        return True
    for allowed in trusted:
        scheme, _, host = allowed.partition("://")
        if origin == allowed or (host.startswith("*.") and origin.startswith(f"{scheme}://")
                                 and origin.endswith(host[1:])):
            return True
    host = _header(scope, b"host")
    netloc = urlsplit(origin).netloc if origin != "null" else ""
    return bool(host) and bool(netloc) and netloc.lower() == host.lower()


def install_handlers(app: Any) -> None:
    """429 + Retry-After when the batcher refuses rows (FastAPI's exception handler on kserve's app).

    Bad input needs nothing here: the Model raises kserve's InvalidInput, which kserve answers 400
    with {"error": message}. In the multi-model server the front answers a full queue before
    forwarding; this handler answers the standalone predictor (no front), and the rare request
    the front admitted while others filled the queue."""
    from fastapi.responses import JSONResponse

    async def overloaded(_: Any, exc: Overloaded) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=429, headers={"Retry-After": str(exc.retry_after)})

    app.add_exception_handler(Overloaded, overloaded)


def settle_heap() -> None:
    """Move what is loaded (torch, kserve, the networks) out of the garbage collector's sight.

    A full collection walked those millions of long-lived objects every few hundred requests:
    p99 211 ms against 40 ms with them frozen, and 30 % fewer requests/s (docs/benchmarks.md)."""
    gc.collect()
    gc.freeze()


def quiet_request_logs() -> None:
    """kserve logs two lines per request (access and timing): a tenth of a small request's time.
    And a traceback for every refused request: see ClientErrorsOnOneLine."""
    for name in ("kserve.trace", "uvicorn.access"):
        logging.getLogger(name).setLevel(logging.WARNING)
    kserve_logger = logging.getLogger("kserve")
    if not any(isinstance(f, ClientErrorsOnOneLine) for f in kserve_logger.filters):
        kserve_logger.addFilter(ClientErrorsOnOneLine())


class ClientErrorsOnOneLine(logging.Filter):
    """kserve's exception handlers log every error they answer as `logger.error("Exception:",
    exc_info=exc)`, the 400 of a caller's bad input (InvalidInput) too: a traceback of ~40 lines
    per bad request, which floods the log under a misbehaving client and hides the server's own
    faults. This filter on the "kserve" logger turns the record of a client error (400 bad input,
    404 unknown model) into one WARNING line with the answer's message; a server error (500,
    503) keeps its traceback. kserve registers its handlers when it starts, over any of ours, so
    the log record is where to change it."""

    MAX_MESSAGE = 300

    def filter(self, record: logging.LogRecord) -> bool:
        from kserve.errors import InvalidInput, ModelNotFound

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, (InvalidInput, ModelNotFound)):
            status = 400 if isinstance(exc, InvalidInput) else 404
            message = " ".join(str(exc).split())
            if len(message) > self.MAX_MESSAGE:
                message = message[: self.MAX_MESSAGE] + "…"
            record.msg, record.args = "refused a request (%s %s): %s", (status, type(exc).__name__, message)
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def serve(directory: Directory, *, port: int, poll_s: float | None = None) -> None:
    """Run the multi-model server on `port` until stopped (SIGTERM / Ctrl-C)."""
    import kserve
    from kserve.model_server import app

    configure_torch()
    server = kserve.ModelServer(http_port=port, workers=1, enable_grpc=False)
    served = Served(directory, server.register_model, server.registered_models.unload)
    stop = threading.Event()
    try:
        served.refresh()
    except Exception:
        log.exception("first read of the registry failed; polling")
    every = poll_s if poll_s is not None else float(os.environ.get("SERVING_POLL_S", "1.0"))
    threading.Thread(target=served.poll_forever, args=(every, stop), name="registry-poll", daemon=True).start()
    watch_access = getattr(directory, "watch_access", None)
    if watch_access is not None:
        threading.Thread(target=watch_access, args=(served.access_changed, stop), name="access-watch",
                         daemon=True).start()
    install_handlers(app)
    app.add_middleware(Front, served=served)
    quiet_request_logs()
    try:
        server.start([])
    finally:
        stop.set()
