"""A statement a hot read runs on every request, prepared once per PostgreSQL connection and run
over the protocol's own prepared-statement messages.

Django's PostgreSQL backend binds parameters on the client and turns psycopg's prepared statements
off (so that connection poolers work), so PostgreSQL parses and plans each statement every time it
comes. For the run detail's hot read (a token and a run's row with the names it shows: six joins)
planning was 0.42 ms of the 0.51 ms the server spent on it (EXPLAIN ANALYZE; docs/benchmarks.md
"API under load"). `fetchone` prepares such a statement the first time a connection runs it
(libpq's PQprepare) and from then on sends only its name and parameters (PQexecPrepared): no SQL
to parse on the server, no query to compose on the client. Session 14 did this with SQL's PREPARE
and EXECUTE through Django's cursor; psycopg's client-side cursor then spent about a third of the
statement composing the EXECUTE and the server parsing it (session 15, same file).

The result's row is loaded by psycopg's Transformer over the connection's own adapters (the ones
Django set up on it), so its values are those Django's cursor gives. Errors go through Django's
`wrap_database_errors`: they are Django's, as for any statement, and a broken connection is marked
so that the request's end closes it. Django does not log these statements (DEBUG's query list).

It is a plain cursor execute on other databases (Python's sqlite3 keeps compiled statements per
connection itself) and when settings.NETLOOM_PREPARED_READS is off, as it must be behind a pooler in
transaction mode (pgbouncer's `pool_mode = transaction` before 1.21, where the next statement may
reach another server connection that never saw the prepare). Inside a transaction it is a plain
execute too (a failed statement inside one would abort it, and a retry could not run). A statement
the server no longer knows (a DISCARD ALL or DEALLOCATE ALL dropped it) is prepared again, and one
it already knows under the same name (a pooler's server connection kept it) is used.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections.abc import Sequence
from functools import cache
from typing import Any

from django.conf import settings
from psycopg import errors, pq
from psycopg.adapt import PyFormat, Transformer

# SQLSTATEs: the name is taken (a pooler's server connection kept another client's), the name
# is unknown (the server dropped it).
DUPLICATE, UNKNOWN = "42P05", "26000"

_PLACEHOLDER = re.compile(r"%s")


# The database connection (psycopg's, not Django's wrapper: a reconnect is a new one) -> the names
# prepared on it.
_prepared: weakref.WeakKeyDictionary[Any, set[bytes]] = weakref.WeakKeyDictionary()


@cache
def _forms(sql: str, count: int) -> tuple[bytes, bytes]:
    """(the statement's name, its text with `count` numbered parameters $1..$n)."""
    if "%%" in sql or len(_PLACEHOLDER.findall(sql)) != count:
        raise ValueError("a prepared read takes a statement whose only % are its parameters' %s")
    numbers = iter(range(1, count + 1))
    name = "netloom_" + hashlib.sha256(sql.encode()).hexdigest()[:24]
    return name.encode(), _PLACEHOLDER.sub(lambda _: f"${next(numbers)}", sql).encode()


def _uses_protocol(db: Any) -> bool:
    return db.vendor == "postgresql" and not db.in_atomic_block and settings.NETLOOM_PREPARED_READS


def fetchone(db: Any, sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    """`sql`'s first row with `params` on `db` (Django's connection) as its cursor would give it, or
    None; prepared once per connection on PostgreSQL when settings allow and no transaction is open."""
    if not _uses_protocol(db):
        with db.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()
    # What Django's cursor() does before a statement: the health check when configured, a
    # connection, this thread's own.
    db.close_if_health_check_failed()
    db.ensure_connection()
    db.validate_thread_sharing()
    with db.wrap_database_errors:
        return _fetchone_prepared(db.connection, sql, params)


def _fetchone_prepared(conn: Any, sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    name, text = _forms(sql, len(params))
    names = _prepared.setdefault(conn, set())
    if name not in names:
        _prepare(conn, name, text)
        names.add(name)
    pgconn, loader = conn.pgconn, Transformer(conn)  # a Transformer refers to its connection: one a call
    values = loader.dump_sequence(params, [PyFormat.TEXT] * len(params))
    result = pgconn.exec_prepared(name, values)
    if result.status != pq.ExecStatus.TUPLES_OK and _sqlstate(result) == UNKNOWN:
        _prepare(conn, name, text)
        result = pgconn.exec_prepared(name, values)
    if result.status != pq.ExecStatus.TUPLES_OK:
        raise errors.error_from_result(result, encoding=conn.info.encoding)
    if result.ntuples == 0:
        return None
    loader.set_pgresult(result)
    return loader.load_row(0, tuple)


def _prepare(conn: Any, name: bytes, text: bytes) -> None:
    result = conn.pgconn.prepare(name, text)
    if result.status != pq.ExecStatus.COMMAND_OK and _sqlstate(result) != DUPLICATE:
        raise errors.error_from_result(result, encoding=conn.info.encoding)


def _sqlstate(result: Any) -> str | None:
    state = result.error_field(pq.DiagnosticField.SQLSTATE)
    return state.decode() if state else None
