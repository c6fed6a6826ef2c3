"""The cyclic garbage collector, told what lives as long as the process.

A web or worker process holds a few hundred thousand objects from its imports (Django, DRF,
Celery, torch, the apps' modules) that never become garbage, and every full collection walks
them all. Allocation-heavy work triggers collections often: a recorder batch of 5,000 metric
events allocates some 20,000 objects, and on a started Django process half of `events_record`'s
time for it was the collector (55 ms of a 5,000-event batch against 23 ms with the startup
objects frozen; docs/benchmarks.md, "Metric store"). `gc.freeze()` moves what is alive now into a
permanent generation the collector never scans; objects made later are collected as before.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> None:
    """Collect once, then keep every object alive now out of the collector's scans.

    Called when a process is set up and before it serves: the ASGI app (webapp/asgi.py), each
    Celery worker process (webapp/celery.py), and the metric bench, which measures the
    worker's write path.
    """
    gc.collect()
    gc.freeze()
