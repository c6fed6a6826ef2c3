"""The cyclic garbage collector, tuned for a process that serves: a web or worker process.

Two costs, both measured (docs/benchmarks.md, "Metric store"):

- A started process holds a few hundred thousand objects from its imports (Django, DRF, Celery,
  torch, the apps' modules) that never become garbage, and a full collection walks them all. On
  a started Django process half of `events_record`'s time for a recorder batch of 5,000 metric
  events (55 ms against 23 ms) was the collector. `gc.freeze()` moves what is alive at setup into
  a permanent generation the collector never scans.
- A request or a batch allocates tens of thousands of small containers (a 20-run comparison some
  60,000 points) that live until it is answered. With the default first threshold (700
  allocations) the collector ran over and over while they were alive: the comparison's p50 was
  125 ms and one request in ten took 240-310 ms. A first threshold of 50,000 keeps the collector
  for garbage that outlives a request: 114 ms p50, none over 150 ms.
"""

from __future__ import annotations

import gc

# Allocations between young collections, young collections per middle one, middle per full one.
THRESHOLDS = (50_000, 20, 20)


def garbage_collector_settle() -> None:
    """Collect once, keep every object alive now out of the collector's scans, and collect the
    young generation after THRESHOLDS[0] allocations instead of 700.

    Called when a process is set up and before it serves: the web servers (webapp/serving.py), each
    Celery worker process (webapp/celery.py), and the metric bench, which measures the
    worker's write path.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
