"""Writes of the blocks app: create a block (version 1), describe, delete, save a new version.

Every definition is checked by the engine (`engine.blocks.check_block`) with the definitions of
the team's blocks it uses, and stored normalised with its name and version set by the server.
"""

from __future__ import annotations

import json
import keyword
import re
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from webapp.accounts.models import Team
from webapp.errors import DomainError
from webapp.limits import engine_limits

from .models import Block, BlockVersion
from .selectors import REF_SEPARATOR, block_refs_used, team_block_version

NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")  # a Python identifier (a class name)
DESCRIPTION_MAX = 2000
NOTE_MAX = 500


def _max_definition_bytes() -> int:
    """A definition may be as large as a whole spec (NETLOOM_MAX_SPEC_BYTES, the engine's limit)."""
    return int(settings.NETLOOM_MAX_SPEC_BYTES)


def block_name_clean(name: Any) -> str:
    """A block's name: a Python identifier (it becomes the generated class's name), or a 400 on `name`."""
    name = name.strip() if isinstance(name, str) else ""
    if not NAME_PATTERN.match(name) or keyword.iskeyword(name):
        raise DomainError(
            "invalid",
            f"A block's name must be a Python identifier (letters, digits, _; not starting with a "
            f"digit; at most 64 characters), got {name!r}.",
            field="name",
        )
    return name


def _text_clean(value: Any, *, field: str, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DomainError("invalid", f"{field} must be text.", field=field)
    if len(value) > limit:
        raise DomainError("invalid", f"{field} is longer than {limit} characters.", field=field)
    return value.strip()


def block_dependencies(*, team_id: int, definition: dict[str, Any]) -> list[dict[str, Any]]:
    """The definitions of the team's blocks `definition` uses, transitively, dependencies first.

    A direct use of a block the team does not have is a 400 naming the inner node and the op
    (`definition.nodes.<id>`). Stored versions carry their own dependencies, so a block deleted
    since does not break the versions that use it.
    """
    found: dict[str, dict[str, Any]] = {}
    for node_id, name, number in block_refs_used(definition):
        ref = f"{name}{REF_SEPARATOR}{number}"
        if ref in found:
            continue
        version = team_block_version(team_id=team_id, name=name, number=number)
        if version is None:
            message = f"node {node_id}: the team has no block {ref} (its op); create it or place another version"
            raise DomainError("unknown_block", message, field=f"definition.nodes.{node_id}")
        for dependency in version.dependencies or []:
            found.setdefault(
                f"{dependency.get('name')}{REF_SEPARATOR}{dependency.get('version')}", dependency
            )
        found[ref] = version.definition
    return list(found.values())


def _problems_error(report: Any) -> DomainError:
    """400 for a definition with errors: the engine's problems under `errors`, keyed by inner node."""
    errors = report.to_json()["errors"]
    fields: dict[str, list[str]] = {}
    for problem in errors:
        key = f"definition.nodes.{problem['node']}" if problem.get("node") else "definition"
        fields.setdefault(key, []).append(problem["message"])
    count = len(errors)
    return DomainError(
        "invalid_block",
        f"The block has {count} problem{'s' if count != 1 else ''}: {report.summary()}",
        fields=fields,
        extra={"errors": errors},
    )


def block_definition_check(
    *,
    team_id: int,
    name: str,
    number: int,
    definition: Any,
    input_shapes: list[list[int]] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Check a definition as version `number` of block `name`: (normalised definition, dependencies).

    Its `name` and `version` are set here. Refused (400): not an object, larger than a spec may
    be, not a block definition (naming the path), a block the team lacks, or the engine's problems.
    """
    from pydantic import ValidationError

    from engine.blocks import check_block
    from engine.spec import BlockSpec

    if not isinstance(definition, dict):
        raise DomainError(
            "invalid", "definition must be a JSON object (a block definition).", field="definition"
        )
    definition = {**definition, "name": name, "version": number}
    limit = _max_definition_bytes()
    size = len(json.dumps(definition, separators=(",", ":")).encode())
    if size > limit:
        raise DomainError(
            "too_large",
            f"The definition is {size} bytes; the limit is {limit} bytes.",
            field="definition",
        )
    try:
        parsed = BlockSpec.model_validate(definition)
    except ValidationError as exc:
        fields: dict[str, list[str]] = {}
        for err in exc.errors(include_url=False):
            path = ".".join(str(part) for part in err["loc"])
            fields.setdefault(f"definition.{path}" if path else "definition", []).append(err["msg"])
        first_field, (first, *_) = next(iter(fields.items()))
        raise DomainError(
            "not_a_block", f"Not a block definition: {first_field}: {first}", fields=fields
        ) from None
    except RecursionError:
        raise DomainError(
            "not_a_block", "The definition is nested too deeply.", field="definition"
        ) from None
    normalised = parsed.model_dump(mode="json")
    dependencies = block_dependencies(team_id=team_id, definition=normalised)
    report = check_block(
        parsed,
        dependencies=[BlockSpec.model_validate(d) for d in dependencies],
        input_shapes=input_shapes,
        limits=engine_limits(),
    )
    if not report.valid:
        raise _problems_error(report)
    return normalised, dependencies


@transaction.atomic
def block_create(
    *,
    team: Team,
    name: Any,
    definition: Any,
    description: Any = "",
    note: Any = "",
    input_shapes: list[list[int]] | None = None,
    created_by: AbstractBaseUser | None,
) -> Block:
    """Create a team's block with its version 1 (the definition checked by the engine)."""
    name = block_name_clean(name)
    description = _text_clean(description, field="description", limit=DESCRIPTION_MAX)
    note = _text_clean(note, field="note", limit=NOTE_MAX)
    if Block.objects.filter(team=team, name=name).exists():
        raise DomainError(
            "name_taken",
            f"Team {team.name} already has a block named {name}; save a new version of it instead.",
            field="name",
        )
    normalised, dependencies = block_definition_check(
        team_id=team.pk, name=name, number=1, definition=definition, input_shapes=input_shapes
    )
    try:
        with transaction.atomic():
            block = Block.objects.create(
                team=team, name=name, description=description, created_by=created_by
            )
    except IntegrityError:  # the same name created at the same moment
        raise DomainError(
            "name_taken", f"Team {team.name} already has a block named {name}.", field="name"
        ) from None
    BlockVersion.objects.create(
        block=block,
        number=1,
        definition=normalised,
        dependencies=dependencies,
        note=note,
        created_by=created_by,
    )
    return block


def block_update(*, block: Block, description: Any) -> Block:
    """Change a block's description (its name is part of every `Name@v` reference: it stays)."""
    block.description = _text_clean(description, field="description", limit=DESCRIPTION_MAX)
    block.save(update_fields=["description", "updated_at"])
    return block


def block_delete(*, block: Block) -> None:
    """Delete a block and its versions. Graphs keep working: their specs embed the definitions."""
    block.delete()


def block_version_create(
    *,
    block: Block,
    definition: Any,
    note: Any = "",
    input_shapes: list[list[int]] | None = None,
    created_by: AbstractBaseUser | None,
) -> BlockVersion:
    """Save a new version (latest + 1) of a block; numbered under the block's row lock."""
    note = _text_clean(note, field="note", limit=NOTE_MAX)
    with transaction.atomic():
        locked = Block.objects.select_for_update().get(pk=block.pk)
        last = locked.versions.order_by("-number").values_list("number", flat=True).first() or 0
        normalised, dependencies = block_definition_check(
            team_id=locked.team_id,
            name=locked.name,
            number=last + 1,
            definition=definition,
            input_shapes=input_shapes,
        )
        version = BlockVersion.objects.create(
            block=locked,
            number=last + 1,
            definition=normalised,
            dependencies=dependencies,
            note=note,
            created_by=created_by,
        )
        locked.save(update_fields=["updated_at"])
    return version
