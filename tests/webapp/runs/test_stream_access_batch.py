"""The batched access re-check of open run streams (webapp/runs/stream/stream_access.py).

Streams of one event loop that ask together share one batch: each still gets the close code a
check of its own would give (4401 dead token or inactive/missing user, 4404 run no longer
visible, None), the batch costs the same queries for 3 streams as for 30, a failing batch
answers every waiter with its error, and nothing outlives the loop.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import OperationalError, connection
from django.utils import timezone

from webapp.accounts.models import ApiToken, Role
from webapp.accounts.services.memberships import membership_remove
from webapp.accounts.services.tokens import token_create, token_revoke
from webapp.runs.stream.routing import websocket_urlpatterns
from webapp.runs.stream.stream_access import (
    CLOSE_NOT_FOUND,
    CLOSE_UNAUTHENTICATED,
    AccessQuestion,
    StreamAccessChecker,
    access_codes,
    stream_access_checker,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _close_consumer_connections() -> Any:
    """The batch's queries run on asgiref's worker thread: close its connection afterwards."""
    yield
    from django.db import connections

    asyncio.run(database_sync_to_async(connections.close_all)())


def single_check_code(token_id: int | None, user: Any, run_id: int) -> int | None:
    """What one stream's own check answered before batching (the single-stream selectors)."""
    from django.contrib.auth import get_user_model

    from webapp.accounts.selectors import token_is_live
    from webapp.runs.selectors import run_for_user

    if token_id is not None and not token_is_live(token_id=token_id):
        return CLOSE_UNAUTHENTICATED
    fresh = get_user_model().objects.filter(pk=user.pk, is_active=True).first()
    if fresh is None:
        return CLOSE_UNAUTHENTICATED
    return CLOSE_NOT_FOUND if run_for_user(user=fresh, run_id=run_id) is None else None


class CountingLookup:
    """access_codes itself, with the queries of each batch counted on the thread that runs them."""

    def __init__(self, fail_first: bool = False) -> None:
        self.batches: list[int] = []  # questions per batch
        self.queries: list[int] = []  # queries per batch
        self.fail_first = fail_first

    def __call__(self, questions: list[AccessQuestion]) -> dict[AccessQuestion, int | None]:
        self.batches.append(len(questions))
        if self.fail_first and len(self.batches) == 1:
            raise OperationalError("database is down")
        executed: list[str] = []

        def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            executed.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            codes = access_codes(questions)
        self.queries.append(len(executed))
        return codes


def streams_of(n: int, *, team: Any, run: Any, make_user: Any) -> list[tuple[int | None, Any, int, int | None]]:
    """n token streams on `run`: by turns live, revoked and of a user who left the team.

    Each is (token id, user, run id, expected code).
    """
    streams = []
    for i in range(n):
        user = make_user(f"watcher{n}_{i}", team, Role.VIEWER)
        token, _ = token_create(user=user, name="watch")
        expected = None
        if i % 3 == 1:
            token_revoke(token=token)
            expected = CLOSE_UNAUTHENTICATED
        elif i % 3 == 2:
            membership_remove(team=team, user=user)
            expected = CLOSE_NOT_FOUND
        streams.append((token.pk, user, run.pk, expected))
    return streams


def test_checks_issued_together_share_one_batch_and_get_each_its_own_code(
    run_a: Any, team_a: Any, user_a: Any, viewer_a: Any, user_b: Any, make_user: Any,
    django_user_model: Any,
) -> None:
    live, _ = token_create(user=user_a, name="live")
    revoked, _ = token_create(user=user_a, name="revoked")
    token_revoke(token=revoked)
    expired, _ = token_create(user=user_a, name="expired")
    ApiToken.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    inactive = make_user("ivan", team_a, Role.VIEWER)
    inactive.is_active = False
    inactive.save(update_fields=["is_active"])
    leaver = make_user("lena", team_a, Role.VIEWER)
    membership_remove(team=team_a, user=leaver)
    missing = django_user_model(pk=987654, username="ghost")  # never saved: no such row
    streams = [
        (live.pk, user_a, run_a.pk, None),
        (revoked.pk, user_a, run_a.pk, CLOSE_UNAUTHENTICATED),
        (expired.pk, user_a, run_a.pk, CLOSE_UNAUTHENTICATED),
        (None, viewer_a, run_a.pk, None),  # a session stream: no token to re-check
        (None, inactive, run_a.pk, CLOSE_UNAUTHENTICATED),
        (None, leaver, run_a.pk, CLOSE_NOT_FOUND),
        (None, user_b, run_a.pk, CLOSE_NOT_FOUND),
        (None, missing, run_a.pk, CLOSE_UNAUTHENTICATED),
        (live.pk, user_a, run_a.pk + 1000, CLOSE_NOT_FOUND),  # the run is gone
    ]
    lookup = CountingLookup()

    async def ask_together() -> list[int | None]:
        checker = StreamAccessChecker(lookup=lookup)
        return await asyncio.gather(*(checker.check(t, u, r) for t, u, r, _ in streams))

    codes = asyncio.run(ask_together())
    assert codes == [expected for *_, expected in streams]
    assert codes == [single_check_code(t, u, r) for t, u, r, _ in streams]
    assert lookup.batches == [len(streams)]


def test_a_batch_costs_the_same_queries_for_3_streams_as_for_30(
    run_a: Any, team_a: Any, user_a: Any, make_user: Any
) -> None:
    def batch_of(n: int) -> tuple[CountingLookup, list[int | None], list[int | None]]:
        streams = streams_of(n, team=team_a, run=run_a, make_user=make_user)
        lookup = CountingLookup()

        async def ask_together() -> list[int | None]:
            checker = StreamAccessChecker(lookup=lookup)
            return await asyncio.gather(*(checker.check(t, u, r) for t, u, r, _ in streams))

        return lookup, asyncio.run(ask_together()), [expected for *_, expected in streams]

    few, few_codes, few_expected = batch_of(3)
    many, many_codes, many_expected = batch_of(30)
    assert few_codes == few_expected and many_codes == many_expected
    assert few.batches == [3] and many.batches == [30]
    assert few.queries == many.queries
    assert few.queries == [3]  # live tokens, active users, visible (user, run) pairs


def test_a_failed_batch_answers_every_waiter_with_its_error_and_the_next_batch_works(
    run_a: Any, user_a: Any, viewer_a: Any
) -> None:
    lookup = CountingLookup(fail_first=True)

    async def scenario() -> tuple[list[Any], list[int | None]]:
        checker = StreamAccessChecker(lookup=lookup)
        users = [user_a, viewer_a, user_a]
        failed = await asyncio.wait_for(
            asyncio.gather(*(checker.check(None, u, run_a.pk) for u in users), return_exceptions=True), 10
        )
        again = await asyncio.wait_for(asyncio.gather(*(checker.check(None, u, run_a.pk) for u in users)), 10)
        return failed, again

    failed, again = asyncio.run(scenario())
    assert all(isinstance(error, OperationalError) for error in failed), failed
    assert again == [None, None, None]
    assert lookup.batches == [2, 2]  # the same question twice is asked once


def test_a_cancelled_waiter_leaves_the_others_answered(run_a: Any, user_a: Any, user_b: Any) -> None:
    lookup = CountingLookup()

    async def scenario() -> tuple[list[int | None], bool]:
        checker = StreamAccessChecker(lookup=lookup)
        first = asyncio.create_task(checker.check(None, user_a, run_a.pk))
        gone = asyncio.create_task(checker.check(None, user_b, run_a.pk))
        third = asyncio.create_task(checker.check(None, user_b, run_a.pk))
        await asyncio.sleep(0)
        gone.cancel()
        answers = await asyncio.wait_for(asyncio.gather(first, third), 10)
        return answers, gone.cancelled()

    answers, cancelled = asyncio.run(scenario())
    assert answers == [None, CLOSE_NOT_FOUND] and cancelled


def test_each_event_loop_has_its_own_checker_and_keeps_no_task_once_answered(run_a: Any, user_a: Any) -> None:
    async def in_a_fresh_loop() -> tuple[StreamAccessChecker, int | None, set[asyncio.Task[Any]]]:
        checker = stream_access_checker()
        assert stream_access_checker() is checker
        code = await checker.check(None, user_a, run_a.pk)
        await asyncio.sleep(0)  # let the drain task finish its last step
        return checker, code, asyncio.all_tasks() - {asyncio.current_task()}

    first, first_code, first_left = asyncio.run(in_a_fresh_loop())
    second, second_code, second_left = asyncio.run(in_a_fresh_loop())
    assert first is not second
    assert first_code is None and second_code is None
    assert first_left == set() and second_left == set()


def ws_for(run_id: int, user: Any, token_id: int | None) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{run_id}/")
    comm.scope["user"] = user
    if token_id is not None:
        comm.scope["auth_token_id"] = token_id
    return comm


async def replayed(comm: WebsocketCommunicator) -> None:
    while (await comm.receive_json_from(timeout=5))["type"] != "replayed":
        pass


def test_open_streams_close_with_their_codes_when_access_ends(run_a: Any, team_a: Any, user_a: Any,
                                                              viewer_a: Any) -> None:
    token, _ = token_create(user=user_a, name="watch")

    async def scenario() -> tuple[Any, Any, bool]:
        revoked_stream, leaver_stream = ws_for(run_a.pk, user_a, token.pk), ws_for(run_a.pk, viewer_a, None)
        kept = ws_for(run_a.pk, user_a, None)  # the same user's session stream: no token to lose
        for comm in (revoked_stream, leaver_stream, kept):
            await comm.connect()
            await replayed(comm)
        # The services send the `access.changed` hint on commit, through this loop's channel layer.
        await database_sync_to_async(token_revoke)(token=token)
        await database_sync_to_async(membership_remove)(team=team_a, user=viewer_a)
        closes = [await comm.receive_output(timeout=5) for comm in (revoked_stream, leaver_stream)]
        still_open = await kept.receive_nothing(timeout=0.5)
        await kept.disconnect()
        return closes[0], closes[1], still_open

    revoked_close, leaver_close, still_open = asyncio.run(scenario())
    assert revoked_close == {"type": "websocket.close", "code": CLOSE_UNAUTHENTICATED}
    assert leaver_close == {"type": "websocket.close", "code": CLOSE_NOT_FOUND}
    assert still_open
