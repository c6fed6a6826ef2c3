"""What each served version did: Prometheus series for /metrics, and a recent window for
`GET /v2/models/<served>/stats` (the browser's live charts)."""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

REQUESTS = Counter("netloom_serving_requests_total", "Inference requests answered",
                   ["model", "version", "outcome"])
LATENCY = Histogram("netloom_serving_request_seconds", "Inference request latency", ["model", "version"],
                    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5))
BATCH = Histogram("netloom_serving_batch_size", "Rows per batch the network ran", ["model", "version"],
                  buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256))
QUEUE = Gauge("netloom_serving_queue_depth", "Rows waiting for a batch", ["model", "version"])

WINDOW_S = 60.0


class VersionStats:
    """Counters of one served version, in Prometheus and over the last WINDOW_S seconds."""

    def __init__(self, model: str, version: str) -> None:
        self.labels = {"model": model, "version": version}
        # The labelled children, bound once: labels() is a locked dict lookup per call.
        self._ok, self._error = (REQUESTS.labels(outcome=o, **self.labels) for o in ("ok", "error"))
        self._latency = LATENCY.labels(**self.labels)
        self._batch = BATCH.labels(**self.labels)
        self._lock = threading.Lock()
        self._requests: deque[tuple[float, float, bool]] = deque()  # (at, seconds, ok)
        self._batches: deque[tuple[float, int]] = deque()
        self.queue_depth = lambda: 0

    def request(self, seconds: float, ok: bool) -> None:
        (self._ok if ok else self._error).inc()
        if ok:
            self._latency.observe(seconds)
        now = time.monotonic()
        with self._lock:
            self._requests.append((now, seconds, ok))
            self._trim(now)

    def batch(self, size: int) -> None:
        self._batch.observe(size)
        now = time.monotonic()
        with self._lock:
            self._batches.append((now, size))
            self._trim(now)

    def _trim(self, now: float) -> None:
        while self._requests and now - self._requests[0][0] > WINDOW_S:
            self._requests.popleft()
        while self._batches and now - self._batches[0][0] > WINDOW_S:
            self._batches.popleft()

    def window(self) -> dict[str, Any]:
        now = time.monotonic()
        with self._lock:
            self._trim(now)
            times = sorted(s for _, s, ok in self._requests if ok)
            errors = sum(1 for _, _, ok in self._requests if not ok)
            sizes = [n for _, n in self._batches]
            total = len(self._requests)

        def pct(q: float) -> float | None:
            return round(1000 * times[min(len(times) - 1, int(q * len(times)))], 3) if times else None

        depth = self.queue_depth()
        QUEUE.labels(**self.labels).set(depth)
        return {"requests": total, "errors": errors,
                "latency_ms": {"p50": pct(0.5), "p95": pct(0.95), "p99": pct(0.99)},
                "batch_size_mean": round(sum(sizes) / len(sizes), 3) if sizes else None,
                "queue_depth": depth}
