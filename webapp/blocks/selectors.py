"""Reads of the blocks app: the library of a team, a block's versions, what a definition uses."""

from __future__ import annotations

from typing import Any

from django.db.models import Max, OuterRef, QuerySet, Subquery

from webapp.errors import NotFound

from .models import Block, BlockVersion

REF_SEPARATOR = "@"  # an instance's op is "<name>@<version>"; never in a catalog op name


def block_ref_parse(op: Any) -> tuple[str, int] | None:
    """`"ResBlock@2"` -> ("ResBlock", 2); None for a catalog op (no "@") or a malformed ref."""
    if not isinstance(op, str) or REF_SEPARATOR not in op:
        return None
    name, _, version = op.rpartition(REF_SEPARATOR)
    if (
        not name
        or not (version.isascii() and version.isdigit())
        or len(version) > 9
        or int(version) < 1
    ):
        return None
    return name, int(version)


def block_refs_used(definition: Any) -> list[tuple[str, str, int]]:
    """(node id, name, version) of every inner node of `definition` that is a block instance."""
    nodes = definition.get("nodes") if isinstance(definition, dict) else None
    used = []
    for node in nodes or []:
        parsed = block_ref_parse(node.get("op")) if isinstance(node, dict) else None
        if parsed is not None:
            used.append((str(node.get("id")), *parsed))
    return used


def blocks_with_latest(queryset: QuerySet[Block]) -> QuerySet[Block]:
    """`latest_number` and `latest_at` (when its newest version was saved) on each block."""
    return queryset.annotate(
        latest_number=Max("versions__number"), latest_at=Max("versions__created_at")
    )


def blocks_version_numbers(*, block_ids: list[int]) -> dict[int, list[int]]:
    """Block id -> its version numbers, newest first (one query for a page of blocks)."""
    numbers: dict[int, list[int]] = {block_id: [] for block_id in block_ids}
    rows = BlockVersion.objects.filter(block_id__in=block_ids).order_by("block_id", "-number")
    for block_id, number in rows.values_list("block_id", "number"):
        numbers[block_id].append(number)
    return numbers


def blocks_latest_interface(*, block_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Block id -> the ports and parameters of its newest version ({params, inputs, outputs}),
    so the palette can draw a block without reading each definition."""
    newest = (
        BlockVersion.objects.filter(block=OuterRef("block"))
        .order_by("-number")
        .values("number")[:1]
    )
    latest = BlockVersion.objects.filter(
        block_id__in=block_ids, number=Subquery(newest)
    ).values_list("block_id", "definition")
    found: dict[int, dict[str, Any]] = {}
    for block_id, definition in latest:
        if not isinstance(definition, dict):
            continue
        found[block_id] = {
            "params": list(definition.get("params") or []),
            "inputs": [
                str(port.get("id"))
                for port in definition.get("inputs") or []
                if isinstance(port, dict)
            ],
            "outputs": [str(ref) for ref in definition.get("outputs") or []],
        }
    return found


def block_version_get(*, block: Block, number: int) -> BlockVersion:
    """Version `number` of `block`; NotFound naming it otherwise."""
    version = block.versions.select_related("block", "created_by").filter(number=number).first()
    if version is None:
        raise NotFound("not_found", f"Block {block.name} has no version {number}.")
    return version


def block_version_latest(*, block: Block) -> BlockVersion | None:
    """The newest version of `block` (None only while it is being created)."""
    return block.versions.select_related("block", "created_by").order_by("-number").first()


def team_block_version(*, team_id: int, name: str, number: int) -> BlockVersion | None:
    """Version `number` of the team's block `name`, if the team has it."""
    return (
        BlockVersion.objects.select_related("block")
        .filter(block__team_id=team_id, block__name=name, number=number)
        .first()
    )
