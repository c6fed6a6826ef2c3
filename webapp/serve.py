"""The ASGI server, configured in one place: `python -m webapp.serve [--host H] [--port P]`.

uvicorn (httptools, uvloop, websockets) serves `webapp.asgi:application`. It hands a request's
body to the application as it arrives, with flow control, so `webapp.api.body_limit` refuses an
oversized body after its headers and the server never holds it: daphne read every body into
memory before the application saw the request (a 1 GiB body cost its process 1 GiB).

`make run`, the test stacks and docker-compose all start the server through this module.
WebSocket frames are sent uncompressed (no permessage-deflate): a stream's frames are small JSON
texts, and compressing each one for each client cost a server with 500 watchers more CPU than
anything else it did (docs/benchmarks.md "Live stream fan-out"); uncompressed, one serialised
text goes to every client at the same seq as it is.

Environment: NETLOOM_WEB_WORKERS (processes, default 2: with the pub/sub channel layer each process
takes a group message once and hands it to its own watchers, so a second process halves the
fan-out work of 500 watchers on two cores; docs/benchmarks.md "Live stream fan-out").
"""

from __future__ import annotations

import argparse
import os
import sys

APP = "webapp.asgi:application"
# A WebSocket message from a browser is a small JSON control frame; 1 MiB is generous.
WS_MAX_MESSAGE_BYTES = 1 << 20


def server_command(*, host: str = "127.0.0.1", port: int = 8000) -> list[str]:
    """The command that starts the server in a child process."""
    return [sys.executable, "-m", "webapp.serve", "--host", host, "--port", str(port)]


def main(argv: list[str] | None = None) -> None:
    """Parse the options and serve until interrupted."""
    import uvicorn

    parser = argparse.ArgumentParser(prog="python -m webapp.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument(
        "--workers", type=int, default=int(os.environ.get("NETLOOM_WEB_WORKERS", "2"))
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    uvicorn.run(
        APP,
        host=args.host,
        port=args.port,
        workers=args.workers,
        http="httptools",
        loop="uvloop",
        ws="websockets-sansio",
        ws_max_size=WS_MAX_MESSAGE_BYTES,
        ws_per_message_deflate=False,
        lifespan="off",
        timeout_keep_alive=5,
        log_level=os.environ.get("NETLOOM_WEB_LOG_LEVEL", "info"),
    )


if __name__ == "__main__":
    main()
