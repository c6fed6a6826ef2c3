"""What a web process does once, after it is set up and before it serves.

`settle_for_serving` is called at the end of webapp/wsgi.py (granian's HTTP workers) and
webapp/asgi.py (uvicorn: the streams, and HTTP without the front).
"""

from __future__ import annotations

from webapp.process_gc import garbage_collector_settle


def import_request_code() -> None:
    """Import the modules requests and streams would otherwise import on first use.

    Django imports the URLconf, and with it every view module, on a process's first request; the
    run views bring in the engine and torch (2.5 s here). Each process's first caller paid that:
    after `make run` the first run page waited 3.5-5 s for its stream's first frame, once per
    stream process, and the first API request of each HTTP worker as long.
    """
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 (evaluated for its imports)
    import webapp.runs.api  # noqa: F401 (a stream's first frame is the run's detail, built with it)


def settle_for_serving() -> None:
    """The request code imported, then the collector tuned over everything alive (process_gc)."""
    import_request_code()
    garbage_collector_settle()
