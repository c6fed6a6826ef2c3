"""retry_while_locked: a write that meets SQLite's lock is tried again, then fails loudly."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError

from webapp import db_locks


@pytest.fixture(autouse=True)
def _no_wait(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []
    monkeypatch.setattr(db_locks.time, "sleep", waits.append)
    return waits


def flaky(failures: list[Exception]) -> Any:
    calls: list[int] = []

    def write() -> int:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return len(calls)

    return write


def test_a_locked_write_is_tried_again_with_growing_waits(_no_wait: list[float]) -> None:
    write = flaky([OperationalError("database is locked"), OperationalError("database is locked")])
    assert db_locks.retry_while_locked(write, what="test") == 3
    assert _no_wait == [0.2, 0.4]


def test_a_write_still_locked_after_every_try_raises_the_error() -> None:
    write = flaky([OperationalError("database is locked")] * 10)
    with pytest.raises(OperationalError, match="locked"):
        db_locks.retry_while_locked(write, what="test", attempts=3)


def test_other_database_errors_are_not_tried_again(_no_wait: list[float]) -> None:
    write = flaky([OperationalError("no such table: x")])
    with pytest.raises(OperationalError, match="no such table"):
        db_locks.retry_while_locked(write, what="test")
    assert _no_wait == []
