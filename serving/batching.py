"""Dynamic batching for one loaded version: requests wait at most `max_wait_s` for company, a
batch holds at most `max_batch_size` rows, and at most `max_queue` rows wait (then: Overloaded,
which the server answers 429 with Retry-After).

kserve's Python server answers each request on its own (on a cluster KServe's batcher sits in
front of the predictor); this is the in-process equivalent, so the same Model class batches under
`make run` and inside an InferenceService. The network runs in one thread beside the event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any


class Overloaded(RuntimeError):
    """The version's queue is full; try again after `retry_after` seconds."""

    def __init__(self, queued: int, retry_after: int = 1) -> None:
        super().__init__(f"{queued} rows are waiting; the queue is full")
        self.retry_after = retry_after


@dataclass(frozen=True)
class BatchSettings:
    max_batch_size: int = 64
    max_wait_s: float = 0.002
    max_queue: int = 1024


class Batcher:
    """Gathers samples from concurrent requests and runs `fn(samples) -> answers` per batch.

    `observe(batch_size)` is told each batch's size (metrics).
    """

    def __init__(self, fn: Callable[[list[Any]], list[Any]], settings: BatchSettings,
                 observe: Callable[[int], None] | None = None) -> None:
        self.fn = fn
        self.settings = settings
        self.observe = observe
        self._waiting: deque[tuple[list[Any], asyncio.Future[list[Any]]]] = deque()
        self._queued = 0
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="netloom-batch")

    @property
    def queue_depth(self) -> int:
        return self._queued

    @property
    def full(self) -> bool:
        """No room for another row: what the server's front asks before admitting a request."""
        return self._queued >= self.settings.max_queue

    async def submit(self, samples: list[Any]) -> list[Any]:
        """Answers for `samples` (in order), computed in some batch; Overloaded when full."""
        if self._queued + len(samples) > self.settings.max_queue and self._queued:
            raise Overloaded(self._queued)
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done():
            self._wake = asyncio.Event()
            self._task = loop.create_task(self._loop())
        future: asyncio.Future[list[Any]] = loop.create_future()
        self._waiting.append((samples, future))
        self._queued += len(samples)
        assert self._wake is not None
        self._wake.set()
        return await future

    async def _loop(self) -> None:
        assert self._wake is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._waiting:
                # Wait for company only while the first request in line is young enough.
                first_at = time.perf_counter()
                while (self._queued < self.settings.max_batch_size
                       and time.perf_counter() - first_at < self.settings.max_wait_s):
                    await asyncio.sleep(0)
                    if self._queued < self.settings.max_batch_size:
                        await asyncio.sleep(self.settings.max_wait_s / 4)
                batch: list[tuple[list[Any], asyncio.Future[list[Any]]]] = []
                rows: list[Any] = []
                while self._waiting and (not rows or len(rows) + len(self._waiting[0][0])
                                         <= self.settings.max_batch_size):
                    samples, future = self._waiting.popleft()
                    batch.append((samples, future))
                    rows.extend(samples)
                self._queued -= len(rows)
                if self.observe is not None:
                    self.observe(len(rows))
                try:
                    answers = await loop.run_in_executor(self._pool, self.fn, rows)
                except Exception as exc:  # one bad batch fails its own requests only
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                at = 0
                for samples, future in batch:
                    if not future.done():
                        future.set_result(answers[at : at + len(samples)])
                    at += len(samples)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)
