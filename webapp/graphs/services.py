"""Writes for graphs: create, rename, delete, save a revision, update a revision's layout."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from webapp.accounts.models import Team
from webapp.audit.services import audit_record
from webapp.errors import Conflict, DomainError
from webapp.limits import engine_limits

from .models import Graph, GraphRevision
from .selectors import revision_latest

CANVAS_KEYS = ("layout", "ui")  # canvas-only parts of a spec; they never change the hash
SAVE_ATTEMPTS = 3


def spec_problems_error(exc: Any) -> DomainError:
    """A SpecError (not a spec at all) as a 400 naming the first bad path."""
    problems = getattr(exc, "problems", []) or []
    first = next((p for p in problems if p.get("path") != "(document)"), None)
    field = f"spec.{first['path']}" if first else "spec"
    return DomainError("not_a_spec", str(exc), field=field)


def check_node_count(spec: Any) -> None:
    """Refuse (400 too_many_nodes, naming NETLOOM_MAX_NODES) a spec with more nodes than a graph may
    have, counted in the parsed JSON before the engine builds anything from it.

    A draft with errors is stored, but not one past this limit: it could never become valid, and a
    100,000-node spec cost the web process hundreds of MiB to parse and keep.
    """
    if not isinstance(spec, dict):
        return
    limit = engine_limits().max_nodes
    parts = [("spec.nodes", spec.get("nodes"))]
    blocks = spec.get("blocks")
    if isinstance(blocks, list):
        parts += [(f"spec.blocks.{i}.nodes", b.get("nodes")) for i, b in enumerate(blocks) if isinstance(b, dict)]
    for field, nodes in parts:
        if isinstance(nodes, list) and len(nodes) > limit:
            raise DomainError("too_many_nodes", f"{field} holds {len(nodes)} nodes; the limit is {limit} "
                              "(NETLOOM_MAX_NODES).", field=field)


def check_spec(spec: Any) -> tuple[dict[str, Any], str, Any]:
    """Parse and validate a spec: (normalised JSON, spec_hash, report); raises if not a spec.

    Version 1 and version 2 (block definitions in `blocks`, instances as `Name@v` ops) alike.
    """
    from engine.spec import SpecError, parse_spec, spec_hash
    from engine.validate import validate

    check_node_count(spec)
    try:
        parsed = parse_spec(spec)
    except SpecError as exc:
        raise spec_problems_error(exc) from None
    report = validate(parsed, engine_limits())
    normalised = parsed.model_dump(mode="json")
    if normalised.get("version") == 1 and not normalised.get("blocks"):
        # A version 1 spec is stored exactly as before blocks existed (version 2 carries them).
        normalised.pop("blocks", None)
    return normalised, spec_hash(parsed), report


@transaction.atomic
def graph_create(
    *, team: Team, name: str, spec: Any = None, created_by: AbstractBaseUser | None
) -> Graph:
    """Create a graph, with revision 1 when a spec is given."""
    name = name.strip()
    if not name:
        raise DomainError("invalid", "A graph needs a name.", field="name")
    graph = Graph.objects.create(team=team, name=name[:200], created_by=created_by)
    if spec is not None:
        revision_save(graph=graph, spec=spec, created_by=created_by)
    audit_record(action="graph.created", actor=created_by, team=team, obj=graph, after={"name": graph.name})
    return graph


def graph_rename(*, graph: Graph, name: str, actor: AbstractBaseUser | None = None) -> Graph:
    """Rename a graph (`actor`: who, for the audit log)."""
    name = name.strip()
    if not name:
        raise DomainError("invalid", "A graph needs a name.", field="name")
    before = graph.name
    with transaction.atomic():
        graph.name = name[:200]
        graph.save(update_fields=["name", "updated_at"])
        if graph.name != before:
            audit_record(action="graph.renamed", actor=actor, team=graph.team, obj=graph,
                         before={"name": before}, after={"name": graph.name})
    return graph


def graph_delete(*, graph: Graph, actor: AbstractBaseUser | None = None) -> None:
    """Delete a graph with its revisions; refused (409) while runs use one of them."""
    try:
        with transaction.atomic():
            audit_record(action="graph.deleted", actor=actor, team=graph.team, obj=graph,
                         before={"name": graph.name})
            graph.delete()
    except ProtectedError:
        raise Conflict("in_use", "Runs use revisions of this graph; delete those runs first.") from None


def revision_ref(revision: GraphRevision) -> dict[str, Any]:
    """A revision as a stale save names it: {number, created_by: {id, username} | null, created_at}."""
    user = revision.created_by
    return {
        "number": revision.number,
        "created_by": {"id": user.pk, "username": user.get_username()} if user is not None else None,
        # As the API writes every time (DRF: ISO 8601, UTC as "Z").
        "created_at": revision.created_at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
    }


def _check_base(graph: Graph, latest: GraphRevision | None, base: int) -> None:
    """Refuse a save whose editor started from `base` when someone saved a newer revision since."""
    if latest is not None and latest.number == base:
        return
    if latest is None or not graph.revisions.filter(number=base).exists():
        raise DomainError("invalid", f"Graph {graph.pk} has no revision {base}.", field="base")
    who = latest.created_by.get_username() if latest.created_by is not None else "someone"
    raise Conflict(
        "stale_base",
        f"Revision {latest.number} was saved by {who} after revision {base}, which this edit "
        "started from: load it, look at the changes, or save anyway (force).",
        extra={"latest": revision_ref(latest), "base": base},
    )


def revision_save(
    *,
    graph: Graph,
    spec: Any,
    created_by: AbstractBaseUser | None,
    origin: str = "",
    base: int | None = None,
    force: bool = False,
) -> tuple[GraphRevision, bool]:
    """Save a spec: a new revision n+1, or the latest one's layout when only the canvas changed.

    `origin` names what made a revision nobody saved by hand (a sweep's variant): it gets the next
    number but never becomes the latest (`revision_latest`), and it is always a new revision.

    `base` is the revision the editor started from: unless `force`, a save whose base is not the
    latest (someone saved since) is refused with Conflict "stale_base" carrying `latest` (number,
    created_by, created_at) and `base`; checked under the graph's lock, so of two saves on one
    base exactly one wins. A base the graph has no revision of is a 400 on `base`. No base: the
    save is not checked (the command-line client, scripts).

    Returns (revision, created). Drafts with errors are saved (valid=False, error_count=N); a
    document that is not a spec at all is refused. Concurrent saves are serialised on the
    graph row (select_for_update), and the unique (graph, number) constraint backs that up:
    a collision is retried, never stored twice.
    """
    normalised, digest, report = check_spec(spec)
    for attempt in range(SAVE_ATTEMPTS):
        try:
            with transaction.atomic():
                locked = Graph.objects.select_for_update().get(pk=graph.pk)
                latest = revision_latest(graph=locked)
                if base is not None and not force:
                    _check_base(locked, latest, base)
                if not origin and latest is not None and latest.spec_hash == digest:
                    _apply_canvas(latest, normalised)
                    return latest, False
                last_number = locked.revisions.order_by("-number").values_list("number", flat=True).first()
                revision = GraphRevision.objects.create(
                    graph=locked,
                    origin=origin,
                    number=(last_number or 0) + 1,
                    spec=normalised,
                    spec_hash=digest,
                    valid=report.valid,
                    error_count=len(report.errors),
                    created_by=created_by,
                )
                locked.save(update_fields=["updated_at"])
                return revision, True
        except IntegrityError:
            if attempt == SAVE_ATTEMPTS - 1:
                raise Conflict(
                    "conflict", "Someone saved this graph at the same moment; save again."
                ) from None
    raise AssertionError("unreachable")


def _apply_canvas(revision: GraphRevision, spec: dict[str, Any]) -> None:
    changed = False
    for key in CANVAS_KEYS:
        if key in spec and revision.spec.get(key) != spec[key]:
            revision.spec[key] = spec[key]
            changed = True
    if changed:
        revision.layout_updated_at = timezone.now()
        revision.save(update_fields=["spec", "layout_updated_at"])


@transaction.atomic
def revision_update_layout(
    *,
    revision: GraphRevision,
    layout: dict[str, Any] | None = None,
    ui: dict[str, Any] | None = None,
) -> GraphRevision:
    """Change only the canvas part (layout, ui) of the graph's latest revision."""
    locked = GraphRevision.objects.select_for_update().get(pk=revision.pk)
    latest = revision_latest(graph=locked.graph)
    latest_number = latest.number if latest is not None else None
    if locked.number != latest_number:
        raise Conflict(
            "not_latest",
            f"Revision {locked.number} is not the latest ({latest_number}); revisions are immutable.",
        )
    canvas: dict[str, Any] = {}
    if layout is not None:
        canvas["layout"] = layout
    if ui is not None:
        canvas["ui"] = ui
    _apply_canvas(locked, canvas)
    return locked
