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


def uploads_leftovers_sweep() -> None:
    """Remove upload files a killed web process left (untouched for NETLOOM_UPLOAD_STALE_SECONDS).

    A web process that starts is often one that replaced a killed one; what that one was
    receiving stays otherwise until the reaper's next sweep.
    """
    import logging

    from django.conf import settings

    from webapp.datasets.services import upload_leftovers_sweep

    try:
        removed = upload_leftovers_sweep(older_than_s=float(settings.NETLOOM_UPLOAD_STALE_SECONDS))
    except OSError as exc:  # a server that cannot sweep still serves
        logging.getLogger(__name__).warning("sweeping upload leftovers failed: %s", exc)
        return
    if removed:
        logging.getLogger(__name__).warning("removed upload leftovers: %s", [str(path) for path in removed])


def settle_for_serving() -> None:
    """Upload leftovers swept, the request code imported, then the collector tuned (process_gc)."""
    uploads_leftovers_sweep()
    import_request_code()
    garbage_collector_settle()
