"""Where an upload is processed: inside the request, or on the datasets worker when one runs.

NETLOOM_DATASET_PROCESSING is "sync", "celery" or "auto" (the default): "auto" asks the broker
whether a worker consumes the datasets queue (one broadcast, half a second at most, remembered for
a while) and queues the work there if so, so a large CSV never holds a request open on a
deployment that has workers, and a laptop without one still gets its upload processed.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings

logger = logging.getLogger(__name__)

ASK_TIMEOUT_S = 0.5
REMEMBER_FOUND_S = 60.0  # a worker seen stays assumed this long
REMEMBER_MISSING_S = 10.0  # none seen: ask again after this long

_lock = threading.Lock()
_answer: tuple[float, bool] | None = None  # (monotonic time of the answer, a worker was there)


def datasets_worker_running() -> bool:
    """Whether a Celery worker consumes the datasets queue now (False when the broker is down)."""
    from webapp.celery import app
    from webapp.queues import DATASETS_QUEUE

    try:
        with app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1, timeout=ASK_TIMEOUT_S)
            replies = app.control.inspect(timeout=ASK_TIMEOUT_S, connection=conn).active_queues()
    except Exception as exc:  # broker unreachable or misconfigured: process here
        logger.info("no broker for dataset processing (%s); processing in the request", exc)
        return False
    return any(
        queue.get("name") == DATASETS_QUEUE for queues in (replies or {}).values() for queue in queues
    )


def processing_mode() -> str:
    """ "celery" or "sync", as the setting says; "auto" decides by whether a worker runs."""
    global _answer
    mode = settings.NETLOOM_DATASET_PROCESSING
    if mode != "auto":
        return mode
    now = time.monotonic()
    with _lock:
        if _answer is not None:
            at, found = _answer
            if now - at < (REMEMBER_FOUND_S if found else REMEMBER_MISSING_S):
                return "celery" if found else "sync"
    found = datasets_worker_running()
    with _lock:
        _answer = (time.monotonic(), found)
    return "celery" if found else "sync"


def forget_workers() -> None:
    """Drop the remembered answer (tests, and a worker that was just started)."""
    global _answer
    with _lock:
        _answer = None
