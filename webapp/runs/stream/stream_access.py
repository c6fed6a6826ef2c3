"""One batched access re-check per server process (per event loop) for all its open run streams.

Every open stream asks again, every ACCESS_RECHECK_SECONDS and on an `access.changed` hint,
whether its token is live, its user active and its run still visible to that user. Asked one
stream at a time that is three queries and a thread hop per stream: with 500 watchers a third of
the server's time (docs/benchmarks.md "Live stream fan-out"). Here the questions that arrive
within BATCH_WINDOW_SECONDS (and all those that arrive while a batch is being answered) are
answered together by one database_sync_to_async call with a fixed number of queries.

    code = await stream_access_checker().check(token_id, user, run_id)

`code` is CLOSE_UNAUTHENTICATED (a dead token, an inactive or missing user), CLOSE_NOT_FOUND (the
run is no longer visible to the user) or None (still allowed). When the batch's queries fail
(the database is down), every waiter of that batch gets the exception, as a single check would
have raised it; none is left waiting.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
# Questions arriving this soon after the first of a batch share its queries. A hint-triggered
# check waits at most this long more than before; the periodic ones lose nothing.
BATCH_WINDOW_SECONDS = 0.25


@dataclass(frozen=True)
class AccessQuestion:
    """What one stream asks: may this token's (or session's) user still see this run?"""

    token_id: int | None  # None for a session-authenticated stream (no token to re-check)
    user_id: int | None
    run_id: int


def access_codes(questions: list[AccessQuestion]) -> dict[AccessQuestion, int | None]:
    """The close code (or None) for each question: three queries for the whole batch, whatever its size."""
    from webapp.accounts.selectors import active_user_ids, live_token_ids

    from ..selectors import runs_visible_pairs

    token_ids = {q.token_id for q in questions if q.token_id is not None}
    user_ids = {q.user_id for q in questions if q.user_id is not None}
    live = live_token_ids(token_ids=token_ids)
    active = active_user_ids(user_ids=user_ids)
    visible = runs_visible_pairs(pairs={(q.user_id, q.run_id) for q in questions if q.user_id in active})
    codes: dict[AccessQuestion, int | None] = {}
    for question in questions:
        if question.token_id is not None and question.token_id not in live:
            codes[question] = CLOSE_UNAUTHENTICATED
        elif question.user_id not in active:
            codes[question] = CLOSE_UNAUTHENTICATED
        elif (question.user_id, question.run_id) not in visible:
            codes[question] = CLOSE_NOT_FOUND
        else:
            codes[question] = None
    return codes


class StreamAccessChecker:
    """Coalesces the access checks of one event loop's streams into batches.

    The first question starts a drain task that waits the window, answers everything pending
    in one thread hop, and goes on while questions came in meanwhile; then it ends, so an idle
    loop holds no task (and nothing that keeps the loop alive).

    Args:
        lookup: the synchronous batch answer (access_codes); run through database_sync_to_async.
        window: seconds the first question of a batch waits for others.
    """

    def __init__(
        self,
        lookup: Callable[[list[AccessQuestion]], dict[AccessQuestion, int | None]] = access_codes,
        window: float = BATCH_WINDOW_SECONDS,
    ) -> None:
        self._lookup = database_sync_to_async(lookup)
        self._window = window
        self._pending: list[tuple[AccessQuestion, asyncio.Future[int | None]]] = []
        self._drain: asyncio.Task[None] | None = None

    async def check(self, token_id: int | None, user: Any, run_id: int) -> int | None:
        """The close code for this stream's credentials and run, or None while it may stay open."""
        if user is None or not getattr(user, "is_authenticated", False) or user.pk is None:
            return CLOSE_UNAUTHENTICATED
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[int | None] = loop.create_future()
        self._pending.append((AccessQuestion(token_id, user.pk, run_id), answer))
        if self._drain is None:
            self._drain = loop.create_task(self._answer_pending())
        return await answer

    async def _answer_pending(self) -> None:
        try:
            await asyncio.sleep(self._window)
            while self._pending:
                batch, self._pending = self._pending, []
                waiting = [(q, f) for q, f in batch if not f.done()]  # a cancelled waiter needs no answer
                if not waiting:
                    continue
                try:
                    codes = await self._lookup(list(dict.fromkeys(q for q, _ in waiting)))
                except asyncio.CancelledError:
                    for _, answer in waiting:
                        answer.cancel()
                    raise
                except Exception as exc:
                    for _, answer in waiting:
                        if not answer.done():
                            answer.set_exception(exc)
                    continue
                for question, answer in waiting:
                    if not answer.done():
                        answer.set_result(codes[question])
        finally:
            # Cancelled (the loop is ending) before some were answered: they must not wait forever.
            for _, answer in self._pending:
                answer.cancel()
            self._pending = []
            self._drain = None


# One checker per running event loop (Channels' tests and asyncio.run make new loops). Weak keys:
# an idle checker holds no future or task, so a finished loop and its checker are dropped.
_CHECKERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, StreamAccessChecker] = (
    weakref.WeakKeyDictionary()
)
_CHECKERS_LOCK = threading.Lock()


def stream_access_checker() -> StreamAccessChecker:
    """The running event loop's checker, made on first use."""
    loop = asyncio.get_running_loop()
    with _CHECKERS_LOCK:  # loops of other threads (asgiref, tests) may ask at the same time
        checker = _CHECKERS.get(loop)
        if checker is None:
            checker = _CHECKERS[loop] = StreamAccessChecker()
    return checker
