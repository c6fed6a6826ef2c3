"""`GET /api/runs/<id>/`: a finished run's document kept in Django's cache under (run, version).

A finished run's detail is read far more often than it changes (a team's dashboards and scripts
poll it), and the serializer builds it from several reads (the run with its joined names, its
summaries, its best checkpoint). Every change to what that document shows moves `Run.version`:
each write of the run's row (RunQuerySet.update, Run.save), and a rename of its graph, dataset or
creator (signals.connect_name_receivers). So the document is rendered once per version and kept in
the cache that every web process shares (and in each process's memory, the `local` cache: a key
names its version, so a copy is never stale); a request reads the run's head (one indexed row,
scoped to the user's teams) and the kept document.

What is on disk (`exports`: a zip made on first download changes no row) and the state of the
run's export job (webapp/jobs: it changes no run row either) are read again for every answer (the
job's state in the head's own query) and are part of the ETag. A run that is not finished is built every time: its queue
position depends on other runs and its duration on the clock, so it has no ETag either.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple

from django.core.cache import cache, caches

from ..models import TERMINAL_STATUSES, Run
from ..selectors import ExportState, run_export_job, run_exports


class RunHead(NamedTuple):
    """What a detail request reads of the run before deciding anything."""

    pk: int
    version: int
    status: str
    created_at: datetime

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL_STATUSES


def run_head(*, run_id: int, user_id: int, team_id: int | None = None) -> RunHead | None:
    """The run's head if `user_id` is a member of its team (and it is team `team_id`'s, for a
    team-bound token), else None (the caller's 404)."""
    runs = Run.objects.filter(pk=run_id, team__memberships__user_id=user_id)
    if team_id is not None:
        runs = runs.filter(team_id=team_id)
    row = runs.values_list(*RunHead._fields).first()
    return RunHead(*row) if row is not None else None


def _key(head: RunHead) -> str:
    # created_at too: a database made again from nothing reuses ids, the cache may outlive it.
    return f"run-detail:{head.pk}:{head.created_at.timestamp():.6f}:{head.version}"


def run_detail_kept(head: RunHead) -> dict[str, Any] | None:
    """What is kept of a finished run at its version: {"document": the serializer's document
    without `exports`, "export": [its export job's state, error]}, or None."""
    if not head.finished:
        return None
    key = _key(head)
    local = caches["local"]  # this process's copy: the key names the version, so never stale
    kept = local.get(key)
    if kept is None:
        kept = cache.get(key)
        if kept is not None:
            local.set(key, kept)
    return kept


def run_head_export(head: RunHead, kept: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """The run's export job's (state, error): kept with the document, else read (once a request)."""
    if kept is not None:
        state, error = kept["export"]
        return state, error
    return run_export_job(run_id=head.pk)


def run_head_exports(head: RunHead, export: tuple[str | None, str | None]) -> dict[str, Any]:
    """What the run offers for download now: the files on disk and its export job's state."""
    return run_exports(ExportState(head.pk, head.status, *export))


def run_detail_etag(head: RunHead, exports: dict[str, Any]) -> str | None:
    """The ETag of a finished run's answer: its version and what is on disk; None while unfinished."""
    if not head.finished:
        return None
    files = hashlib.blake2b(repr(sorted(exports.items())).encode(), digest_size=6).hexdigest()
    return f'"{_key(head).removeprefix("run-detail:").replace(":", "-")}-{files}"'


def run_detail_document(*, head: RunHead, kept: dict[str, Any] | None,
                        export: tuple[str | None, str | None], exports: dict[str, Any],
                        render: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The run's detail document: `render()`'s (the serializer's), kept per version when finished.

    The export job's state is kept beside it: its changes move the run's version too
    (inference/jobs.py), so both are current for the version in the key.
    """
    if not head.finished:
        return render()
    if kept is None:
        document = dict(render())  # `export` was read before it: never newer than the document
        document.pop("exports", None)
        kept = {"document": document, "export": list(export)}
        key = _key(head)
        cache.set(key, kept)
        caches["local"].set(key, kept)
    return {**kept["document"], "exports": exports}
