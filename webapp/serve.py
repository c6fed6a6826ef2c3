"""The web tier, configured in one place: `python -m webapp.serve [--host H] [--port P]`.

One address, three servers, each doing what it is best at (docs/subsystems/web-tier.md; docs/decisions/0003-web-tier.md):

- **the front, nginx**, listens on H:P. `/ws/...` goes to the stream server, every other
  request to the HTTP server, both over private Unix sockets in a folder of its own (0700). It
  passes request bodies through as they arrive (no buffering: the HTTP server's guard refuses an
  oversized body after its headers; a chunked one, which has no length to judge, it reads whole
  first), answers what it refuses itself with the API's JSON error body, and tells the HTTP server
  the client's address (`X-Netloom-Client-Addr`, overwriting any a client sent: the sign-in
  lockout counts real clients).
- **HTTP: granian serving Django's WSGI handler** (webapp/wsgi.py), NETLOOM_WEB_WORKERS granian
  processes, each on a Unix socket of its own, with NETLOOM_WEB_THREADS threads (default 1:
  Django's work holds the GIL, so one thread a process serves the most; granian's Rust runtime
  holds the connections meanwhile); nginx spreads requests over them (`least_conn`): on one shared
  socket one process kept most of nginx's kept-alive connections and the others idled. On this machine it
  served a plain Django view at 1.9-2.4x, and `GET /api/runs/<id>/` at 1.4-1.6x with 0.7x the
  p99, of uvicorn with Django on a thread pool (docs/decisions/0003-web-tier.md).
- **streams: uvicorn** (httptools, uvloop, websockets) serving `webapp.asgi:application`,
  NETLOOM_STREAM_WORKERS processes (default: as many as HTTP's; with the pub/sub channel layer each process takes a
  group message once and hands it to its own watchers; docs/benchmarks.md "Live stream fan-out").
  WebSocket frames are sent uncompressed: compressing each frame for each of 500 watchers cost more
  CPU than anything else the server did.

Where nginx is not installed (or NETLOOM_WEB_FRONT=none), uvicorn alone serves both on H:P, as
before the front: everything works, HTTP at the lower speed; it says so in one line at start.
`make install` installs nginx where it may (Debian's nginx-light).

`make run`, the test stacks and docker-compose all start the web tier through this module; it
stops every server it started when it is stopped (SIGTERM, SIGINT) or when one of them dies, and
they die with it when it is killed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from webapp.logredact import granian_log_config, redact_lines

APP = "webapp.asgi:application"
# The WSGI callable granian serves; NETLOOM_WSGI_APP names another (bench/api_load.py's, which
# answers one bench-only path itself and hands every other request to this one).
WSGI_APP = "webapp.wsgi:application"
# A WebSocket message from a browser is a small JSON control frame; 1 MiB is generous.
WS_MAX_MESSAGE_BYTES = 1 << 20
# How long the HTTP and stream servers may take to import Django and listen.
START_SECONDS = 120


def server_command(*, host: str = "127.0.0.1", port: int = 8000) -> list[str]:
    """The command that starts the web tier in a child process."""
    return [sys.executable, "-m", "webapp.serve", "--host", host, "--port", str(port)]


def front_available() -> bool:
    """Whether the front (nginx) serves: installed, and not turned off with NETLOOM_WEB_FRONT=none."""
    return os.environ.get("NETLOOM_WEB_FRONT", "nginx") != "none" and _nginx() is not None


def _nginx() -> str | None:
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")  # root's PATH may lack sbin


def _log_level() -> str:
    return os.environ.get("NETLOOM_WEB_LOG_LEVEL", "info")


def _access_log_on() -> bool:
    """Whether requests are logged one line each: at the info and debug levels (the benches and
    the image's health check run at warning)."""
    return _log_level() in ("info", "debug", "trace")


def _streams(*, workers: int, host: str = "127.0.0.1", port: int | None = None, uds: str | None = None) -> None:
    """uvicorn serving the ASGI application (in front mode only /ws/ reaches it), until stopped."""
    import uvicorn

    from webapp.logredact import uvicorn_log_config

    uvicorn.run(
        APP,
        host=host,
        port=port or 8000,
        uds=uds,
        workers=workers,
        http="httptools",
        loop="uvloop",
        ws="websockets-sansio",
        ws_max_size=WS_MAX_MESSAGE_BYTES,
        ws_per_message_deflate=False,
        lifespan="off",
        timeout_keep_alive=5,
        # Every handler carries the secret filter (webapp/logredact.py): uvicorn logs a WebSocket's
        # path with its query ("?token=..."). Behind the front, nginx's access log is the one.
        log_config=uvicorn_log_config(),
        access_log=uds is None,
        # Behind the front: the client's address and scheme are the front's X-Forwarded-* headers.
        proxy_headers=uds is not None,
        forwarded_allow_ips="*" if uds is not None else None,
        log_level=_log_level(),
    )


def _quoted(body: bytes) -> str:
    text = body.decode()
    assert "'" not in text and "\\" not in text  # it goes into the configuration in single quotes
    return f"'{text}'"


# The answers the front gives itself, in the API's error body (webapp/api/errors.py): nginx's own
# are HTML pages. status: (code, message); 494 is nginx's "request header too large", sent as 400.
FRONT_ERRORS: dict[int, tuple[int, str, str]] = {
    400: (400, "bad_request", "The request could not be read."),
    494: (400, "bad_request", "The request headers are too large."),
    405: (405, "method_not_allowed", "This method is not allowed here."),
    408: (408, "request_timeout", "The request did not arrive in time."),
    411: (411, "length_required", "The request body has no length."),
    414: (414, "uri_too_long", "The request address is too long."),
    500: (500, "server_error", "Something went wrong on the server."),
    502: (502, "bad_gateway", "The application server did not answer; try again in a moment."),
    503: (503, "unavailable", "The service is unavailable; try again in a moment."),
    504: (504, "gateway_timeout", "The application server did not answer in time; try again."),
}


def front_error_body(code: str, message: str) -> str:
    """The house error body, as the front's configuration quotes it."""
    import json

    return _quoted(json.dumps({"error": {"code": code, "message": message, "fields": {}}}).encode())


def _chunked_locations(common: str) -> str:
    """Where a chunked body goes: read whole by the front, then handed on with a Content-Length.

    The guard behind judges a body by its declared length (webapp/api/body_limit.py) and Django
    reads one without a length as empty; nginx counts a chunked body against client_max_body_size
    as it arrives. So the front reads it (into its own folder, removed with the request), refusing
    it with 413 once it passes its content type's limit, and hands it on whole, where the guard and
    Django see an ordinary request. A named location keeps the body unread until it is proxied.
    """
    from webapp.api.body_limit import limit_for

    blocks = []
    for kind, content_type in (("multipart", b"multipart/form-data"), ("other", b"application/json")):
        blocks.append(f"""        location @chunked_{kind} {{
            client_max_body_size {limit_for(content_type)};
            proxy_request_buffering on;
            default_type application/json;
            proxy_pass http://http_app;{common}
            proxy_set_header Connection "";
            proxy_set_header X-Netloom-Client-Addr $remote_addr;
            proxy_read_timeout 600s;
            proxy_send_timeout 600s;
        }}""")
    return "\n".join(blocks)


def _front_error_pages() -> str:
    """The server's `error_page`s: every error the front makes itself answers the API's JSON body.

    Server-wide, so that what nginx refuses before any location (TRACE: 405; a malformed request:
    400) is covered too; a location with an `error_page` of its own would drop these. 418 and 419
    are no answers: they send a chunked request to `_chunked_locations`. `recursive_error_pages`
    lets a chunked body over its limit, refused there, still reach @too_large.
    """
    lines = ["        recursive_error_pages on;", "        error_page 418 = @chunked_multipart;",
             "        error_page 419 = @chunked_other;", "        error_page 413 = @too_large;"]
    for status, (answer, code, message) in FRONT_ERRORS.items():
        lines.append(f"        error_page {status} = @error_{status};")
        lines.append(f"        location @error_{status} {{ default_type application/json; "
                     f"return {answer} {front_error_body(code, message)}; }}")
    return "\n".join(lines)


def _too_large() -> tuple[int, str, str]:
    """The largest body any request may declare, and the API's 413 answers (multipart, other)."""
    from webapp.api.body_limit import largest_limit, too_large_body

    return (largest_limit(), _quoted(too_large_body(b"multipart/form-data")),
            _quoted(too_large_body(b"application/json")))


def serving_upstream() -> str:
    """host:port of the model server the front sends /v2/ to: SERVING_UPSTREAM, else
    127.0.0.1:SERVING_PORT (8090), where `make run` starts it."""
    return os.environ.get("SERVING_UPSTREAM") or f"127.0.0.1:{int(os.environ.get('SERVING_PORT', '8090'))}"


def nginx_config(*, host: str, port: int, folder: Path, http_sockets: list[Path], stream_socket: Path) -> str:
    """The front's whole configuration: one server on host:port, two upstreams on Unix sockets.

    HTTP is one upstream server per HTTP process, each on a socket of its own, and nginx sends each
    request to the one with the fewest requests in flight (least_conn). On one socket shared by
    the processes, whichever accepted first kept the front's kept-alive connections: under load one
    process worked a whole core while the other had a quarter of one (docs/benchmarks.md).
    """
    http_servers = " ".join(f"server unix:{path};" for path in http_sockets)
    listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    # Started as root, nginx's workers would run as `nobody`, who cannot reach the sockets' folder:
    # they run as the user every other server of the service runs as.
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};" if os.geteuid() == 0 else ""
    largest, too_large_multipart, too_large_other = _too_large()
    common = """
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-Proto $http_x_forwarded_proto;"""
    return f"""# Written by webapp/serve.py for one start; nothing here is kept.
{user}
worker_processes 1;
daemon off;
pid {folder}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 8192; }}
http {{
{_access_log()}
    default_type application/octet-stream;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    # The HTTP server's guard decides what a body may hold (webapp/api/body_limit.py); the front
    # streams a body through without storing it, and refuses one larger than any request may
    # send itself, with the API's answer, so that what reaches the guard is bounded (the guard
    # reads a refused body to its end to keep its connection usable: webapp/wsgi.py).
    client_max_body_size {largest};
    proxy_request_buffering off;
    map $content_type $too_large_body {{ ~*^multipart/ {too_large_multipart}; default {too_large_other}; }}
    map $http_transfer_encoding $chunked_kind {{ ~*chunked 1; default ""; }}
    map "$chunked_kind:$content_type" $chunked_body {{ ~*^1:multipart/ multipart; ~^1: other; default ""; }}
    server_tokens off;
    upstream http_app {{ least_conn; {http_servers} keepalive 64; }}
    upstream streams {{ server unix:{stream_socket}; }}
    upstream model_server {{ server {serving_upstream()}; keepalive 64; }}
    map $http_upgrade $connection_upgrade {{ default upgrade; "" close; }}
    server {{
        listen {listen} backlog=4096;
        location /ws/ {{
            proxy_pass http://streams;{common}
            # uvicorn's client address (its log lines): the front's peer, whatever a client wrote.
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_buffering off;
            proxy_read_timeout 1d;
            proxy_send_timeout 1d;
        }}
        location /v2/ {{
            # The model server (`python -m serving`, docs/subsystems/serving.md): OIP v2 inference
            # with the API's tokens or the browser's session; its /metrics stays internal (not under /v2/).
            proxy_pass http://model_server;{common}
            proxy_set_header Connection "";
            proxy_read_timeout 60s;
        }}
{_front_error_pages()}
        location / {{
            # A chunked body has no length for the guard behind to judge: the front reads it first
            # (_chunked_locations), so it reaches the guard with one.
            if ($chunked_body = multipart) {{
                return 418;
            }}
            if ($chunked_body = other) {{
                return 419;
            }}
            default_type application/json;
            proxy_pass http://http_app;{common}
            proxy_set_header Connection "";
            proxy_set_header X-Netloom-Client-Addr $remote_addr;
            # What a client (or a proxy before the front) sent, with the front's peer appended:
            # Django believes it only where NETLOOM_TRUSTED_PROXIES names that peer
            # (webapp/api/client_address.py).
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_read_timeout 600s;
            proxy_send_timeout 600s;
        }}
{_chunked_locations(common)}
        location @too_large {{
            default_type application/json;
            return 413 $too_large_body;
        }}
    }}
}}
"""


# A query parameter whose value is secret (the names webapp/logredact.py hides).
_SECRET_PARAM = r"[A-Za-z0-9_-]*(?:token|password\d?|passwd|secret|api_?key|sessionid)="


def _access_log() -> str:
    """nginx's access log: one line a request, the client's secrets left out.

    The line has the path ($uri) and the query with every secret value hidden (the map), never
    $request or $request_uri (the query as sent: `/ws/runs/4/?token=nl_...`), the Referer or any
    header that carries a credential. One secret parameter is hidden by itself
    (`?since=3&token=[REDACTED]`), a query with several is hidden whole.
    """
    if not _access_log_on():
        return "    access_log off;"
    kept = rf"(?:(?!{_SECRET_PARAM})[^&]*)"
    return f"""    map $args $logged_args {{
        default $args;
        "~*^(?<args_before>(?:{kept}&)*)(?<secret_name>{_SECRET_PARAM[:-1]})=[^&]*(?<args_after>(?:&{kept})*)$"
            "${{args_before}}${{secret_name}}=[REDACTED]${{args_after}}";
        "~*(?:^|&){_SECRET_PARAM}" "[REDACTED]";
    }}
    log_format netloom '$remote_addr - [$time_local] "$request_method $uri$is_args$logged_args '
                       '$server_protocol" $status $body_bytes_sent $request_time "$http_user_agent"';
    access_log /dev/stdout netloom;"""


def _die_with_parent() -> None:
    """In a child, before exec: the kernel sends it SIGTERM when this process dies (even SIGKILLed)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _wait_for_socket(path: Path, child: subprocess.Popen[bytes], name: str) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise SystemExit(f"webapp.serve: the {name} server exited at start (status {child.returncode})")
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as probe:
            probe.connect(str(path))
            return
        time.sleep(0.05)
    raise SystemExit(f"webapp.serve: the {name} server did not listen on {path} within {START_SECONDS} s")


def serve_behind_front(*, host: str, port: int, http_workers: int, stream_workers: int) -> int:
    """Start the HTTP server, the stream server and the front; stop them all when one ends."""
    folder = Path(tempfile.mkdtemp(prefix="netloom-web-"))  # 0700: only this user reaches the sockets
    # One granian a socket, named as its process is: the front balances them.
    http_sockets = {f"HTTP {index + 1}": folder / f"http-{index}.sock" for index in range(http_workers)}
    stream_socket = folder / "streams.sock"
    threads = int(os.environ.get("NETLOOM_WEB_THREADS") or 1)
    level = _log_level()
    children: dict[str, subprocess.Popen[bytes]] = {}

    def start(name: str, argv: list[str], *, piped: bool = False) -> None:
        # `piped`: the child's output is not Python's logging (nginx's error log writes the request
        # line, query and all): it reaches this process's stdout and stderr through the secret
        # filter. A pipe also lets nginx open /dev/stdout whatever this process's stdout is (a
        # socket, under systemd, cannot be opened by path).
        output = subprocess.PIPE if piped else None
        child = children[name] = subprocess.Popen(argv, preexec_fn=_die_with_parent,  # noqa: PLW1509
                                                  stdout=output, stderr=output)
        if piped:
            for source, sink in ((child.stdout, sys.stdout.buffer), (child.stderr, sys.stderr.buffer)):
                threading.Thread(target=redact_lines, args=(source, sink), name=f"{name} output",
                                 daemon=True).start()

    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    status = 0
    granian_logging = folder / "granian-logging.json"
    granian_logging.write_text(json.dumps(granian_log_config()))
    try:
        for name, path in http_sockets.items():
            start(name, [
                sys.executable, "-m", "granian", "--interface", "wsgi", "--uds", str(path),
                "--workers", "1", "--blocking-threads", str(threads), "--respawn-failed-workers",
                "--no-access-log", "--log-level", "warning" if level == "info" else level,
                "--log-config", str(granian_logging),
                os.environ.get("NETLOOM_WSGI_APP") or WSGI_APP,
            ])
        start("stream", [sys.executable, "-m", "webapp.serve", "--streams-uds", str(stream_socket),
                         "--workers", str(stream_workers)])
        for name, path in {**http_sockets, "stream": stream_socket}.items():
            _wait_for_socket(path, children[name], name)
        config = folder / "nginx.conf"
        config.write_text(nginx_config(host=host, port=port, folder=folder, http_sockets=list(http_sockets.values()),
                                       stream_socket=stream_socket))
        start("front", [_nginx() or "nginx", "-p", str(folder), "-c", str(config), "-e", "stderr"], piped=True)
        print(f"webapp.serve: http://{host}:{port}/ (nginx in front of granian for HTTP, "
              f"{http_workers}x{threads}, and uvicorn for streams, {stream_workers})", flush=True)
        while not stopping:
            ended = next((name for name, child in children.items() if child.poll() is not None), None)
            if ended is not None:
                print(f"webapp.serve: the {ended} server exited (status {children[ended].returncode}); "
                      "stopping the others", file=sys.stderr, flush=True)
                status = 1
                break
            time.sleep(0.2)
    finally:
        for child in children.values():
            if child.poll() is None:
                child.terminate()
        deadline = time.monotonic() + 10
        for child in children.values():
            try:
                child.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(5)
        shutil.rmtree(folder, ignore_errors=True)
    return status


def main(argv: list[str] | None = None) -> None:
    """Parse the options and serve until stopped."""
    parser = argparse.ArgumentParser(prog="python -m webapp.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--workers", type=int, default=None, help="processes of each server")
    parser.add_argument("--streams-uds", default=None, help=argparse.SUPPRESS)  # the stream server, behind the front
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    if args.streams_uds:
        _streams(workers=args.workers or 1, uds=args.streams_uds)
        return
    http_workers = args.workers or int(os.environ.get("NETLOOM_WEB_WORKERS") or 2)
    stream_workers = args.workers or int(os.environ.get("NETLOOM_STREAM_WORKERS") or http_workers)
    if front_available():
        sys.exit(serve_behind_front(host=args.host, port=args.port, http_workers=http_workers,
                                    stream_workers=stream_workers))
    if os.environ.get("NETLOOM_WEB_FRONT", "nginx") != "none":
        print("webapp.serve: nginx is not installed, so uvicorn serves HTTP too, at a lower speed "
              "(apt-get install nginx-light; docs/deploy.md)", file=sys.stderr, flush=True)
    _streams(workers=http_workers, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
