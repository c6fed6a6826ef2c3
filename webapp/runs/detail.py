"""`GET /api/runs/<id>/` of a finished run, from a per-process cache keyed by what it is made of.

A finished run's detail is read far more often than it changes (a team's dashboards and scripts
poll it), and building it cost ~7 ms of Python a request: the ORM compiling the run's query with
its joined names and the serializer's summaries and best-checkpoint queries, DRF building the
serializer's 40 fields (docs/benchmarks.md "API under load"). Here one precompiled SQL statement
reads the run's row with the names the document shows, scoped to the user's teams (for a request
with a token, the same statement checks the token: run_detail_kept_json_for_token); the document
is rebuilt only when that row differs from the one it was built from.

What the document is made of, and why the row covers it (on PostgreSQL the row carries the run
row's version instead of its values, _parts):
- every column of the run (every concrete field of Run: renames, notes, tags, status, progress,
  export state, the event sequence `event_seq`), and the graph's name, the revision's number, the
  dataset's name and the creator's username (the joined names);
- its summaries and best checkpoint, which change only with stored events, and every stored event
  moves `event_seq` (webapp/runs/events.py::events_record);
- what is on disk (`exports`: a zip made on first download changes no row) is read again for
  every answer (selectors.run_exports: one listing of the export folder).
A run that is not finished is built every time: its queue position depends on other runs and its
duration on the clock. A serializer field read from anywhere else must be added to the row here
(tests/webapp/runs/test_detail_cache.py changes each source and reads the detail back).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.utils import timezone

from webapp import prepared
from webapp.accounts.models import Membership
from webapp.accounts.selectors import TokenGrant, token_grant_with_row, token_hash
from webapp.datasets.models import Dataset
from webapp.graphs.models import Graph, GraphRevision

from .models import TERMINAL_STATUSES, ReadGeneration, Run
from .selectors import ExportState, run_exports

# Documents kept per process (a few KB each), and tokens' reads of runs (a few hundred bytes each).
CACHE_SIZE = 2048
TOKEN_READS_SIZE = 8192


@dataclass
class _Kept:
    """A run's document, the row it was built from, and its last JSON answer with the files then."""

    row: tuple[Any, ...]
    document: dict[str, Any]
    # (the files' part, the JSON with it): one value, replaced whole, so two threads answering
    # after the files changed can never leave one's body beside the other's files.
    answer: tuple[dict[str, Any], bytes] | None = None


# Run id -> what is kept of it, least recently read first.
_documents: OrderedDict[int, _Kept] = OrderedDict()
_lock = threading.Lock()


# The run's columns the read itself uses, first in its row; what the document is made of follows.
_HEAD = ("id", "status", "export_status", "export_error")
_ID, _STATUS, _EXPORT_STATUS, _EXPORT_ERROR = range(len(_HEAD))
# What follows on other databases: every column of the run, then the names its document shows.
_RUN_COLUMNS = tuple(field.column for field in Run._meta.concrete_fields)


@cache
def _parts(vendor: str) -> tuple[str, str, str]:
    """(the columns of a run's row that say which document is current, the joins after the run `r`
    that bring the names it shows, the condition that the user named by the placeholder `{member}`
    is a member of the run's team). Every join is a LEFT JOIN so that, after a LEFT JOIN of the run
    itself (run_detail_kept_json_for_token), a run not found leaves NULLs, not no row.

    After _HEAD, the row is what the document is made of: the run, then the names. On PostgreSQL
    the run is its row's version, not its values: xmin, the transaction that wrote that version,
    and ctid, which differs between two versions one transaction wrote (any UPDATE writes a new
    version); elsewhere every column of the run. Sending, loading and comparing the run's 42
    columns (JSON among them) was a third of the hot read's statement on PostgreSQL (session 15,
    docs/benchmarks.md "API under load")."""
    q = connection.ops.quote_name

    def table(model: Any) -> str:
        return q(model._meta.db_table)

    run = (["r.xmin::text", "r.ctid::text"] if vendor == "postgresql"
           else [f"r.{q(column)}" for column in _RUN_COLUMNS])
    columns = ", ".join([*(f"r.{q(column)}" for column in _HEAD), *run, f"rev.{q('number')}", f"rev.{q('graph_id')}",
                         f"g.{q('name')}", f"d.{q('name')}",
                         f"cu.{q('username')}"])  # what the serializer shows: created_by.username
    joins = (
        f"LEFT JOIN {table(GraphRevision)} rev ON rev.{q('id')} = r.{q('graph_revision_id')} "
        f"LEFT JOIN {table(Graph)} g ON g.{q('id')} = rev.{q('graph_id')} "
        f"LEFT JOIN {table(Dataset)} d ON d.{q('id')} = r.{q('dataset_id')} "
        f"LEFT JOIN {table(get_user_model())} cu ON cu.{q('id')} = r.{q('created_by_id')}"
    )
    member = (f"r.{q('team_id')} IN "
              f"(SELECT {q('team_id')} FROM {table(Membership)} WHERE {q('user_id')} = {{member}})")
    return columns, joins, member


@cache
def _statement(vendor: str) -> str:
    """The row of a run with the names its document shows, if the user is a member of its team."""
    columns, joins, member = _parts(vendor)
    q = connection.ops.quote_name
    return (f"SELECT {columns} FROM {q(Run._meta.db_table)} r {joins} "
            f"WHERE r.{q('id')} = %s AND {member.format(member='%s')}")


@cache
def _with_token(vendor: str) -> tuple[str, str]:
    """The same row as `token_grant_with_row`'s columns and joins: the run by the placeholder's
    id, if the token's user (`t.user_id`) is a member of its team; on PostgreSQL the read
    generation last (_generation)."""
    columns, joins, member = _parts(vendor)
    q = connection.ops.quote_name
    joins = (f"LEFT JOIN {q(Run._meta.db_table)} r ON r.{q('id')} = %s "
             f"AND {member.format(member='t.' + q('user_id'))} {joins}")
    if vendor == "postgresql":
        columns, joins = f"{columns}, {_GENERATION_COLUMN}", f"{joins} {_generation_join()}"
    return columns, joins


# --- A token's read of a run, kept per process ---------------------------------------------------
#
# The statement above is six joins, and on PostgreSQL it was most of a kept detail's cost: ~250 of
# ~420 µs a request in process, and the server's CPU beside it (session 15, docs/benchmarks.md "API
# under load"). What it answers for a token and a run changes only when the run's row changes
# (its version: xmin, ctid) or when something changes who may read it or the names it shows,
# and every such change moves ReadGeneration's one row in the same transaction (the triggers of
# migration runs/0008). So its answer is kept per (token, run), with the run's version and the
# generation it saw, and the next read asks only for those two (one index lookup and one row):
# while both are the same, so is the answer. The token's expiry is a time, checked here. The same
# snapshot rule as the whole statement holds: a change committed before the read is seen by it.
#
# And no statement at all for a request the front received before the kept read was last checked
# (on every database): that check saw every change committed before the request came in, which is
# all the whole statement run for it would promise. Under load a request waits in the web tier's
# queue for tens of milliseconds, so one check answers every request that came in before it: on
# PostgreSQL the round trip was half of a process's time with a run training (session 15's
# profile). The front's stamp is nginx's $msec (webapp/front.py::RECEIVED): its clock in whole
# milliseconds, read as a turn of its event loop begins, so a request read later in the same turn
# carries that turn's start. The check must have been sent at least RECEIVED_MARGIN after the
# stamp, which covers the truncation and a turn of that length; a turn longer than that (nginx
# descheduled in the middle of one) could let a request that came in up to that much later be
# answered from the check. A stamp older than RECEIVED_WINDOW is not used: that request is
# checked as it is, so a stamp, whatever it says, can never stretch a read's life beyond that.
RECEIVED_MARGIN = 0.005
RECEIVED_WINDOW = 5.0

_GENERATION_COLUMN = "rg.value"


@cache
def _generation_join() -> str:
    q = connection.ops.quote_name
    return f"LEFT JOIN {q(ReadGeneration._meta.db_table)} rg ON rg.{q('id')} = 1"


@cache
def _version_statement() -> str:
    """The run's version and the read generation (no row when the run is gone)."""
    q = connection.ops.quote_name
    return (f"SELECT r.xmin::text, r.ctid::text, {_GENERATION_COLUMN} FROM {q(Run._meta.db_table)} r "
            f"{_generation_join()} WHERE r.{q('id')} = %s")


# Where the run's version is in a PostgreSQL row (after _HEAD, _parts).
_VERSION = slice(len(_HEAD), len(_HEAD) + 2)


@dataclass
class _TokenRead:
    """What the whole statement answered for a token and a run, and what it stays true while."""

    grant: TokenGrant
    row: tuple[Any, ...]
    # (the run's xmin, its ctid, the read generation); None where there is none (SQLite): the
    # whole statement checks it again
    version: tuple[Any, ...] | None
    checked: float  # time.time() as the last statement that answered or confirmed it was sent


# (sha256 of the token, run id) -> the read, least recently used first.
_token_reads: OrderedDict[tuple[str, int], _TokenRead] = OrderedDict()


def _token_read_kept(db: Any, key: tuple[str, int],
                     received: float | None) -> tuple[TokenGrant, tuple[Any, ...]] | None:
    """(The grant, the run's row) of the token's kept read of the run, `key` (the token's hash, the
    run's id), while it still holds, else None.

    `received`: when the front received the request (webapp/front.py::RECEIVED), None if unknown.
    """
    with _lock:
        read = _token_reads.get(key)
        if read is not None:
            _token_reads.move_to_end(key)
    if read is None or (read.grant.expires_at is not None and read.grant.expires_at <= timezone.now()):
        return None
    now = time.time()
    # (A check later than now: the clock was set back since, and the stamps say nothing against it.)
    if received is not None and now - RECEIVED_WINDOW <= received <= read.checked - RECEIVED_MARGIN <= now:
        return read.grant, read.row  # checked after the request came in
    if read.version is None:
        return None
    if prepared.fetchone(db, _version_statement(), [key[1]]) != read.version:
        return None
    read.checked = max(read.checked, now)  # `now` came before the statement; two threads keep the later
    return read.grant, read.row


def _token_read_keep(key: tuple[str, int], grant: TokenGrant, row: tuple[Any, ...], *, checked: float,
                     postgresql: bool) -> tuple[Any, ...]:
    """Keep a row of the whole statement (the run found), sent at `checked`; its row without the
    generation (PostgreSQL's, last)."""
    version = None
    if postgresql:
        row, generation = row[:-1], row[-1]
        if generation is None:  # no generation row yet: nothing to know a change by
            return row
        version = (*row[_VERSION], generation)
    with _lock:
        _token_reads[key] = _TokenRead(grant, row, version, checked)
        _token_reads.move_to_end(key)
        while len(_token_reads) > TOKEN_READS_SIZE:
            _token_reads.popitem(last=False)
    return row


def _kept_for(run_id: int, row: tuple[Any, ...]) -> _Kept | None:
    """What is kept of the run, if it was built from this row."""
    with _lock:
        kept = _documents.get(run_id)
        if kept is not None:
            _documents.move_to_end(run_id)
    # Equal tuples of column values: the same row (repr() of it was a thirtieth of an answer).
    return kept if kept is not None and kept.row == row else None


def _read(run_id: int, user_id: int) -> tuple[tuple[Any, ...], _Kept | None] | None:
    """(the run's row, what is kept of the run if it was built from it) if `user_id` may read it."""
    row = prepared.fetchone(connection, _statement(connection.vendor), [run_id, user_id])
    return (row, _kept_for(run_id, row)) if row is not None else None


def _exports(run_id: int, row: tuple[Any, ...]) -> dict[str, Any]:
    return run_exports(ExportState(run_id, row[_STATUS], row[_EXPORT_STATUS], row[_EXPORT_ERROR]))


def run_detail_cached(*, run_id: int, user_id: int, render: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    """The run's detail document: `render()`'s, kept while the run's row stays the same.

    None when the run is not among the user's teams' (the caller answers as it would: 404).
    `render` builds the document the uncached way (the serializer).
    """
    read = _read(run_id, user_id)
    if read is None:
        return None
    row, kept = read
    if row[_STATUS] not in TERMINAL_STATUSES:
        return render()
    if kept is None:
        kept = _Kept(row, dict(render()))
        with _lock:
            _documents[run_id] = kept
            _documents.move_to_end(run_id)
            while len(_documents) > CACHE_SIZE:
                _documents.popitem(last=False)
    return {**kept.document, "exports": _exports(run_id, row)}


def run_detail_kept_json_for_token(*, run_id: int, raw_token: str, render: Callable[[dict[str, Any]], bytes],
                                   received: float | None = None) -> tuple[TokenGrant, bytes] | None:
    """The run's detail as JSON for the user of a token when its document for the current row is
    kept and the user may read it: (the token's grant, for token_touch, and the JSON). None when
    the token grants nothing, the user may not read the run or its document is not kept (the
    caller takes the path of run_detail_cached, which checks the token itself and keeps the document).

    The token's check (token_grant_with_row's) and the run's row are one statement; its answer is
    kept, not asked again for a request the front received before it was last checked
    (`received`, webapp/front.py::RECEIVED), and on PostgreSQL checked again as the run's version
    and the read generation (_token_read_kept). `render` encodes a document; the answer is encoded
    again only when the files on disk changed.
    """
    db = connections[DEFAULT_DB_ALIAS]  # this thread's connection, looked up once (the proxy costs µs a use)
    postgresql = db.vendor == "postgresql"
    key = (token_hash(raw_token), run_id)
    found = _token_read_kept(db, key, received)
    if found is None:
        columns, joins = _with_token(db.vendor)
        checked = time.time()
        found = token_grant_with_row(raw_token=raw_token, columns=columns, joins=joins, params=[run_id])
        if found is None:
            return None
        grant, row = found
        if row[_ID] is None:  # no such run among the user's teams'
            return None
        row = _token_read_keep(key, grant, row, checked=checked, postgresql=postgresql)
    else:
        grant, row = found
    kept = _kept_for(run_id, row)
    if kept is None or row[_STATUS] not in TERMINAL_STATUSES:
        return None
    exports = _exports(run_id, row)
    answer = kept.answer
    if answer is None or answer[0] != exports:
        answer = kept.answer = (exports, render({**kept.document, "exports": exports}))
    return grant, answer[1]
