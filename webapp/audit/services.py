"""Writes of the audit log: `audit_record`, the one function every service calls after a change.

An entry is written in the transaction of the change it records, so a change that fails after
the call (a later constraint, a later step that raises) rolls its entry back with it, and a change
that commits always has its entry. Called outside a transaction it raises `AuditOutsideTransaction`:
a programming error, never a user's (docs/decisions/0016-audit-in-the-same-transaction.md).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models, transaction

from webapp.logredact import MASK, SECRET_KEY, redact

from .models import AuditEntry

SYSTEM_ACTOR = "system"  # actor_name of a change no signed-in user made (a command, a worker)
OBJECT_REPR_MAX = 200


class AuditOutsideTransaction(RuntimeError):
    """audit_record was called with no transaction open: its entry could outlive a failed change."""


def audit_record(
    *,
    action: str,
    actor: Any,
    team: Any,
    obj: models.Model | None = None,
    object_type: str | None = None,
    object_id: Any = None,
    object_repr: str | None = None,
    before: Any = None,
    after: Any = None,
) -> AuditEntry:
    """Record that `actor` did `action` ("graph.renamed") in `team` (None: site-level) on an object.

    The object is `obj` (its model name, pk and name unless the keywords say otherwise) or the
    `object_type`/`object_id`/`object_repr` given. `before`/`after` are the fields that changed, as
    JSON (dates and decimals become strings); a key named like a secret (token, password,
    secret, api key) is stored as [REDACTED], and so is an API token anywhere in a value.
    """
    if not transaction.get_connection().in_atomic_block:
        raise AuditOutsideTransaction(
            f"audit_record({action!r}) needs the change's transaction: call it inside transaction.atomic()."
        )
    if obj is not None:
        object_type = object_type or obj._meta.model_name
        object_id = obj.pk if object_id is None else object_id
        if object_repr is None:
            object_repr = getattr(obj, "name", "") or f"{object_type} {object_id}"
    is_user = actor is not None and getattr(actor, "is_authenticated", False)
    return AuditEntry.objects.create(
        team=team,
        team_name=getattr(team, "name", "") or "",
        actor=actor if is_user else None,
        actor_name=actor.get_username() if is_user else SYSTEM_ACTOR,
        action=action,
        object_type=object_type or "",
        object_id="" if object_id is None else str(object_id),
        object_repr=(object_repr or "")[:OBJECT_REPR_MAX],
        before=_clean(before),
        after=_clean(after),
    )


def _clean(value: Any) -> Any:
    """`value` as plain JSON with secrets hidden (None stays None: no such side)."""
    if value is None:
        return None
    return _hide_secrets(json.loads(json.dumps(value, cls=DjangoJSONEncoder)))


def _hide_secrets(value: Any, key: str | None = None) -> Any:
    if key is not None and SECRET_KEY.match(key) and value is not None:
        return MASK
    if isinstance(value, dict):
        return {k: _hide_secrets(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_hide_secrets(item) for item in value]
    if isinstance(value, str):
        return redact(value)
    return value
