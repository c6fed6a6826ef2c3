"""Writes of a graph's shared document: seed once, append accepted updates, compact, save a revision.

The database is the record (docs/subsystems/coediting.md): every update a room accepts is
appended here, in its own transaction, before it is broadcast; a room's document is loaded from
the snapshot plus the log, so a restarted server or a late joiner loses nothing. Once the log
passes COMPACT_AFTER entries it is merged (pycrdt.merge_updates) into the snapshot.

Yjs updates commute and are idempotent, so the log's order never matters for the result and a
compaction that runs beside an append (another process) loses nothing: it deletes exactly the
rows it merged, and any row it did not read is applied after the snapshot on the next load.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone
from pycrdt import Doc, merge_updates

from webapp.audit.services import audit_record
from webapp.errors import DomainError

from ..models import Graph, GraphCollabDoc, GraphCollabUpdate, GraphRevision
from ..selectors import revision_latest
from ..services import revision_save
from .doc import spec_to_ydoc, ydoc_to_spec

logger = logging.getLogger(__name__)

COMPACT_AFTER = 200  # log entries before they are merged into the snapshot
SAVE_MESSAGE_MAX = 500


def collab_doc_ensure(*, graph_id: int) -> GraphCollabDoc:
    """The graph's shared-document row, seeded from its latest revision the first time (once).

    Two first joiners (two processes) may both compute a seed: the unique graph column lets
    exactly one row in; the other reads that one.
    """
    found = GraphCollabDoc.objects.filter(graph_id=graph_id).first()
    if found is not None:
        return found
    graph = Graph.objects.get(pk=graph_id)
    latest = revision_latest(graph=graph)
    doc = spec_to_ydoc(latest.spec) if latest is not None else Doc()
    try:
        with transaction.atomic():
            return GraphCollabDoc.objects.create(
                graph=graph,
                snapshot=doc.get_update(),
                base_revision=latest.number if latest is not None else None,
            )
    except IntegrityError:
        return GraphCollabDoc.objects.get(graph_id=graph_id)


def collab_updates(*, graph_id: int) -> tuple[GraphCollabDoc, list[bytes]]:
    """The row and [snapshot, *log] of the graph's document (seeding it first if needed)."""
    row = collab_doc_ensure(graph_id=graph_id)
    # The log first, then the snapshot: a compaction in between only moves entries into the
    # snapshot read after it, so nothing is missed (reading in the other order could).
    log = [
        bytes(d)
        for d in GraphCollabUpdate.objects.filter(doc=row)
        .order_by("id")
        .values_list("data", flat=True)
    ]
    row.refresh_from_db(fields=["snapshot", "base_revision"])
    return row, [bytes(row.snapshot), *log]


def collab_doc_load(*, graph_id: int, doc: Doc | None = None) -> Doc:
    """The graph's shared document: snapshot + log applied (to `doc` when given)."""
    _, updates = collab_updates(graph_id=graph_id)
    return apply_all(updates, doc)


def apply_all(updates: list[bytes], doc: Doc | None = None) -> Doc:
    """`doc` (a new one when None) with the stored updates applied; one that fails is skipped
    (the room checks every update before storing it, so this is only a guard)."""
    doc = doc if doc is not None else Doc()
    for update in updates:
        if not update:
            continue
        try:
            doc.apply_update(update)
        except Exception:
            logger.exception("shared doc: a stored update does not apply; skipped")
    return doc


def collab_update_append(
    *,
    graph_id: int,
    data: bytes,
    user_id: int | None,
    doc_id: int | None = None,
    log_count: int | None = None,
) -> int:
    """Store one accepted update (one INSERT, a transaction of its own); compacts a long log.

    A room passes its document row (`doc_id`) and the log length it knows (`log_count`), so an
    edit costs one statement; without them they are looked up. Returns the log's length.
    """
    if doc_id is None:
        doc_id = collab_doc_ensure(graph_id=graph_id).pk
    GraphCollabUpdate.objects.create(doc_id=doc_id, data=data, user_id=user_id)
    count = (
        log_count + 1
        if log_count is not None
        else GraphCollabUpdate.objects.filter(doc_id=doc_id).count()
    )
    if count > COMPACT_AFTER:
        count = collab_compact(graph_id=graph_id)
    return count


def collab_compact(*, graph_id: int) -> int:
    """Merge the snapshot and the log read now into one snapshot; the log entries left (new ones)."""
    with transaction.atomic():
        row = GraphCollabDoc.objects.select_for_update().get(graph_id=graph_id)
        entries = list(
            GraphCollabUpdate.objects.filter(doc=row).order_by("id").values_list("id", "data")
        )
        if entries:
            parts = [bytes(row.snapshot)] if row.snapshot else []
            row.snapshot = merge_updates(*parts, *(bytes(data) for _, data in entries))
            row.compacted_at = timezone.now()
            row.save(update_fields=["snapshot", "compacted_at"])
            GraphCollabUpdate.objects.filter(pk__in=[pk for pk, _ in entries]).delete()
        return GraphCollabUpdate.objects.filter(doc=row).count()


def collab_save(
    *, graph: Graph, created_by: AbstractBaseUser | None, message: str = ""
) -> tuple[GraphRevision, bool]:
    """Save the shared document's spec as a revision (the usual revision_save: validated the same
    way, a new immutable revision, or the latest's layout when only the canvas changed).

    The document is not reset. `message` is kept in the audit log's entry of the save.
    """
    if len(message) > SAVE_MESSAGE_MAX:
        raise DomainError(
            "invalid", f"A message has at most {SAVE_MESSAGE_MAX} characters.", field="message"
        )
    spec = ydoc_to_spec(collab_doc_load(graph_id=graph.pk))
    revision, created = revision_save(graph=graph, spec=spec, created_by=created_by)
    with transaction.atomic():
        audit_record(
            action="graph.shared_saved",
            actor=created_by,
            team=graph.team,
            obj=graph,
            after={"revision": revision.number, "created": created, "message": message},
        )
    return revision, created


def collab_state(*, graph: Graph) -> dict[str, Any]:
    """{spec: the spec the shared document stands for, updates: log length, base_revision}."""
    row, updates = collab_updates(graph_id=graph.pk)
    return {
        "spec": ydoc_to_spec(apply_all(updates)),
        "updates": len(updates) - 1,
        "base_revision": row.base_revision,
    }
