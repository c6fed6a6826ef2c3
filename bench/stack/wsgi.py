"""The bench stack's WSGI callable (bench/api_load.py): the service's, plus one baseline in front of it.

`/bench/raw/` is answered here, before Django is asked anything: a constant JSON body from a bare
WSGI callable under the same granian and nginx as the service. It is the floor of the serving
stack on this machine (the front, granian's glue, the load generator sharing the cores), which
no Python answer can beat; every other request is webapp/wsgi.py's. webapp/serve.py serves this
when NETLOOM_WSGI_APP names it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from webapp.wsgi import application as service

# After webapp.wsgi, which sets Django up: bench.stack.urls imports DRF, which needs the apps loaded.
RAW_PATH = "/bench/raw/"

from bench.stack.urls import BODY  # noqa: E402

RAW = json.dumps(BODY).encode()
HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(RAW)))]


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The raw baseline for its path, the service for every other."""
    if environ.get("PATH_INFO") == RAW_PATH:
        start_response("200 OK", HEADERS)
        return [RAW]
    return service(environ, start_response)
