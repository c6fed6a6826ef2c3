"""A statement a hot read runs on every request, prepared once per PostgreSQL connection.

Django's PostgreSQL backend binds parameters on the client and turns psycopg's prepared statements
off (so that connection poolers work), so PostgreSQL parses and plans each statement every time it
comes. For the run detail's hot read (a token and a run's row with the names it shows: six joins)
planning was 0.42 ms of the 0.51 ms the server spent on it (EXPLAIN ANALYZE; docs/benchmarks.md
"API under load"). `execute` prepares such a statement with SQL's PREPARE the first time a
connection runs it, and runs it with EXECUTE from then on; it goes through Django's cursor, so its
errors are Django's, as for any statement.

It is a plain `cursor.execute` on other databases (Python's sqlite3 keeps compiled statements per
connection itself) and when settings.NETLOOM_PREPARED_READS is off, as it must be behind a pooler in
transaction mode (pgbouncer's `pool_mode = transaction` before 1.21, where the next statement may
reach another server connection that never saw the PREPARE). Inside a transaction it is a plain
execute too. A statement the server no longer knows (a DISCARD ALL dropped it) is prepared again,
and one it already knows under the same name (a pooler's server connection kept it) is used.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections.abc import Sequence
from functools import cache
from typing import Any

from django.conf import settings
from django.db import ProgrammingError

# The database connection (psycopg's, not Django's wrapper: a reconnect is a new one) -> the names
# prepared on it.
_prepared: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()

_PLACEHOLDER = re.compile(r"%s")


@cache
def _forms(sql: str, count: int) -> tuple[str, str, str]:
    """(the statement's name, its PREPARE, its EXECUTE with `count` placeholders)."""
    if "%%" in sql or len(_PLACEHOLDER.findall(sql)) != count:
        raise ValueError("a prepared read takes a statement whose only % are its parameters' %s")
    numbers = iter(range(1, count + 1))
    name = "netloom_" + hashlib.sha256(sql.encode()).hexdigest()[:24]
    prepare = f"PREPARE {name} AS " + _PLACEHOLDER.sub(lambda _: f"${next(numbers)}", sql)
    return name, prepare, f"EXECUTE {name}" + (f"({', '.join(['%s'] * count)})" if count else "")


# SQLSTATEs: the name is taken (a pooler's server connection kept another client's), the name
# is unknown (the server dropped it).
DUPLICATE, UNKNOWN = "42P05", "26000"


def _sqlstate(error: Exception) -> str | None:
    return getattr(error.__cause__, "sqlstate", None)


def execute(db: Any, cursor: Any, sql: str, params: Sequence[Any]) -> None:
    """`cursor.execute(sql, params)` on `db` (Django's connection), prepared once per connection on
    PostgreSQL when settings allow and no transaction is open (a failed statement inside one would
    abort it, and a retry could not run)."""
    if db.vendor != "postgresql" or db.in_atomic_block or not settings.NETLOOM_PREPARED_READS:
        cursor.execute(sql, params)
        return
    name, prepare, run = _forms(sql, len(params))
    names = _prepared.setdefault(db.connection, set())
    if name not in names:
        try:
            cursor.execute(prepare)
        except ProgrammingError as error:
            if _sqlstate(error) != DUPLICATE:
                raise
        names.add(name)
    try:
        cursor.execute(run, params)
    except ProgrammingError as error:
        if _sqlstate(error) != UNKNOWN:
            raise
        cursor.execute(prepare)
        cursor.execute(run, params)
