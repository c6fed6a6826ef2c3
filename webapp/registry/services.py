"""Writes of the registry: models, versions copied from a run's export, alias moves with history.

Every alias move is one transaction: the alias row and its AliasMove (who, when, from -> to,
note) are written together, under the model's row lock, so two moves never interleave and the
history is never missing a move. `production` is moved or dropped only by a team admin; when the
team asks for it, a move of `production` is a request that a second admin approves.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from webapp.accounts.models import Role, Team, role_at_least
from webapp.accounts.selectors import role_in_team
from webapp.audit.services import audit_record
from webapp.errors import Conflict, DomainError, Forbidden, NotFound

from .models import (
    AliasApproval,
    AliasMove,
    ApprovalStatus,
    ModelAlias,
    ModelVersion,
    RegisteredModel,
)
from .selectors import version_folder

ALIAS_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
# Aliases only a team admin may move or drop (the model a team runs in production).
GUARDED_ALIASES = frozenset({"production"})
# The files of a run's export a version keeps (ONNX and its notes when the export has them).
VERSION_FILES = ("model.safetensors", "model.py", "predict.py", "data.json", "export.json", "config.json",
                 "model.onnx", "metrics.json", "README.md")


def model_create(*, team: Team, name: str, description: str = "", created_by: AbstractBaseUser | None) -> RegisteredModel:
    """A new model of `team` (DomainError name_taken when the team has one of that name)."""
    try:
        with transaction.atomic():
            model = RegisteredModel.objects.create(team=team, name=name, description=description, created_by=created_by)
            audit_record(action="model.created", actor=created_by, team=team, obj=model, object_type="model",
                         after={"name": name, "description": description})
            return model
    except IntegrityError:
        raise DomainError("name_taken", f"Team {team.name} already has a model named {name!r}.", field="name") from None


def _source_folder(*, run: Any, checkpoint: str | None) -> tuple[Path, dict[str, Any]]:
    """The export folder holding the weights to register, and the metrics they were recorded with."""
    from webapp.runs.inference.exports import run_checkpoint_export
    from webapp.runs.models import Checkpoint, RunStatus
    from webapp.runs.selectors import run_export_dir

    if checkpoint:
        download = run_checkpoint_export(run=run, name=checkpoint, fmt="safetensors", audit=False)  # 404 / 409 named
        row = Checkpoint.objects.get(run=run, name=checkpoint)
        return download.path.parent, dict(row.metrics or {})
    folder = run_export_dir(run)
    if run.status != RunStatus.SUCCEEDED or not (folder / "export.json").is_file():
        raise Conflict("run_not_trained", f"Run {run.pk} has no finished export ({run.status}); register one of "
                       "its checkpoints instead.", field="run")
    return folder, dict(run.final_metrics or {})


def version_create(
    *, model: RegisteredModel, run: Any, checkpoint: str | None = None, note: str = "",
    created_by: AbstractBaseUser | None,
) -> ModelVersion:
    """Version n+1 of `model`: the run's export (or one checkpoint's) copied into the registry.

    The run must be one of the model's team. The files are copied into a temporary folder and
    renamed into place inside the transaction that numbers the version; a failure leaves neither
    a row nor a folder.
    """
    from engine.atomic import atomic_dir

    if run.team_id != model.team_id:
        raise DomainError("invalid", f"Run {run.pk} is not a run of team {model.team.name}.", field="run")
    source, metrics = _source_folder(run=run, checkpoint=checkpoint)
    revision = run.graph_revision
    facts = {
        "run": run.pk, "run_name": run.name, "checkpoint": checkpoint or None,
        "graph": revision.graph_id, "graph_name": revision.graph.name, "revision": revision.number,
        "dataset": run.dataset_id, "dataset_name": run.dataset.name if run.dataset else None,
    }
    with transaction.atomic():
        locked = RegisteredModel.objects.select_for_update().get(pk=model.pk)
        number = (locked.versions.aggregate(n=Max("number"))["n"] or 0) + 1
        folder = version_folder(model_id=model.pk, number=number)
        with atomic_dir(folder) as staging:
            for name in VERSION_FILES:
                if (source / name).is_file():
                    shutil.copy2(source / name, staging / name)
        try:
            version = ModelVersion.objects.create(model=locked, number=number, run=run, source=facts,
                                                  metrics=metrics, note=note, created_by=created_by)
            locked.save(update_fields=["updated_at"])
            audit_record(action="model.version_registered", actor=created_by, team=locked.team, obj=locked,
                         object_type="model", after={"version": number, "run": run.pk, "checkpoint": checkpoint or None,
                                                     "note": note})
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
    return version


def _check_alias_name(alias: str) -> None:
    if not ALIAS_PATTERN.match(alias):
        raise DomainError("invalid", f"{alias!r} is not an alias: lower-case letters, digits, - and _, "
                          "starting with a letter, at most 40.", field="alias")


def _is_admin(*, user: AbstractBaseUser | None, team: Team) -> bool:
    return role_at_least(role_in_team(user=user, team=team), Role.ADMIN) if user is not None else False


def _check_alias(*, model: RegisteredModel, alias: str, actor: AbstractBaseUser | None) -> None:
    _check_alias_name(alias)
    if alias in GUARDED_ALIASES and not _is_admin(user=actor, team=model.team):
        raise Forbidden("alias_guarded", f"Only an admin of team {model.team.name} moves {alias!r}.")


def needs_approval(*, model: RegisteredModel, alias: str) -> bool:
    """Whether moving `alias` of `model` is filed as a request for a second admin's approval."""
    return alias in GUARDED_ALIASES and model.team.production_needs_approval


def _move(
    *, locked: RegisteredModel, version: ModelVersion, alias: str, note: str, actor: AbstractBaseUser | None,
    approved_by: AbstractBaseUser | None = None,
) -> ModelAlias:
    """Point `alias` at `version` under the model's row lock, and record the move."""
    current = ModelAlias.objects.select_related("version").filter(model=locked, name=alias).first()
    if current is not None and current.version_id == version.pk:
        return current
    before = current.version.number if current is not None else None
    if current is None:
        current = ModelAlias.objects.create(model=locked, name=alias, version=version, updated_by=actor)
    else:
        current.version, current.updated_by = version, actor
        current.save(update_fields=["version", "updated_by", "updated_at"])
    AliasMove.objects.create(model=locked, alias=alias, from_version=before, to_version=version.number,
                             actor=actor, approved_by=approved_by, note=note)
    after: dict[str, object] = {"alias": alias, "version": version.number, "note": note}
    if approved_by is not None:
        after["approved_by"] = approved_by.get_username()
    audit_record(action="model.alias_moved", actor=actor, team=locked.team, obj=locked, object_type="model",
                 before={"alias": alias, "version": before}, after=after)
    return current


def alias_set(
    *, model: RegisteredModel, alias: str, number: int, note: str = "", actor: AbstractBaseUser | None,
) -> ModelAlias | AliasApproval:
    """Point `alias` at version `number` (created if new); the move goes into the history.

    Moving it to the version it already names changes nothing and records nothing. When the
    team asks for approval of production moves, an editor's or admin's move of `production` is
    filed as a pending AliasApproval instead (see `alias_approve`); the alias stays where it is.
    """
    _check_alias_name(alias)
    if needs_approval(model=model, alias=alias):
        return alias_request(model=model, alias=alias, number=number, note=note, actor=actor)
    _check_alias(model=model, alias=alias, actor=actor)
    with transaction.atomic():
        locked = RegisteredModel.objects.select_for_update().get(pk=model.pk)
        version = locked.versions.filter(number=number).first()
        if version is None:
            raise NotFound("version_missing", f"Model {model.name!r} has no version {number}.", field="version")
        return _move(locked=locked, version=version, alias=alias, note=note, actor=actor)


def alias_request(
    *, model: RegisteredModel, alias: str, number: int, note: str = "", actor: AbstractBaseUser | None,
) -> ModelAlias | AliasApproval:
    """File a request to move a guarded alias to version `number`, for another admin to approve.

    Editors and admins may ask. The alias's version now is kept with the request (approving it
    after the alias moved otherwise is refused as stale). Asking again for the same move while a
    request of one's own is pending answers that request; asking for the version the alias
    already names changes nothing (the alias is answered).
    """
    _check_alias_name(alias)
    if not role_at_least(role_in_team(user=actor, team=model.team), Role.EDITOR):
        raise Forbidden("forbidden", f"Only an editor or admin of team {model.team.name} asks to move {alias!r}.")
    with transaction.atomic():
        locked = RegisteredModel.objects.select_for_update().get(pk=model.pk)
        version = locked.versions.filter(number=number).first()
        if version is None:
            raise NotFound("version_missing", f"Model {model.name!r} has no version {number}.", field="version")
        current = ModelAlias.objects.select_related("version").filter(model=locked, name=alias).first()
        if current is not None and current.version_id == version.pk:
            return current
        pending = AliasApproval.objects.filter(model=locked, alias=alias, version=version, requested_by=actor,
                                               status=ApprovalStatus.PENDING).first()
        if pending is not None:
            return pending
        approval = AliasApproval.objects.create(
            model=locked, alias=alias, version=version, note=note, requested_by=actor,
            from_version=current.version.number if current is not None else None,
        )
        audit_record(action="model.alias_move_requested", actor=actor, team=model.team, obj=locked,
                     object_type="model", before={"alias": alias, "version": approval.from_version},
                     after={"alias": alias, "version": version.number, "note": note, "approval": approval.pk})
        return approval


def _pending(*, locked: RegisteredModel, approval_id: int) -> AliasApproval:
    approval = (AliasApproval.objects.select_for_update().select_related("version", "requested_by")
                .filter(model=locked, pk=approval_id).first())
    if approval is None:
        raise NotFound("approval_missing", f"Model {locked.name!r} has no approval request {approval_id}.")
    if approval.status != ApprovalStatus.PENDING:
        raise Conflict("approval_decided", f"Request {approval_id} was already {approval.status}.")
    return approval


def alias_approve(*, model: RegisteredModel, approval_id: int, actor: AbstractBaseUser | None) -> AliasApproval:
    """A second admin approves a pending request: the alias moves in the same transaction, and
    the history keeps both the person who asked (actor) and the one who approved.

    403 `same_person` for the one who asked, 403 `alias_guarded` for a non-admin, 409
    `approval_stale` when the alias no longer names the version it named at the request, 409
    `approval_decided` when it was approved or rejected already.
    """
    with transaction.atomic():
        locked = RegisteredModel.objects.select_for_update().select_related("team").get(pk=model.pk)
        approval = _pending(locked=locked, approval_id=approval_id)
        if actor is not None and approval.requested_by_id == actor.pk:
            raise Forbidden("same_person", "You asked for this move; another admin of the team approves it.")
        if not _is_admin(user=actor, team=locked.team):
            raise Forbidden("alias_guarded", f"Only an admin of team {locked.team.name} approves moving "
                            f"{approval.alias!r}.")
        current = ModelAlias.objects.select_related("version").filter(model=locked, name=approval.alias).first()
        now = current.version.number if current is not None else None
        if now != approval.from_version:
            raise Conflict("approval_stale", f"{approval.alias} moved since the request (it named "
                           f"{_named(approval.from_version)}, now {_named(now)}); ask again.")
        _move(locked=locked, version=approval.version, alias=approval.alias, note=approval.note,
              actor=approval.requested_by, approved_by=actor)
        approval.status, approval.decided_by, approval.decided_at = ApprovalStatus.APPROVED, actor, timezone.now()
        approval.save(update_fields=["status", "decided_by", "decided_at"])
    return approval


def alias_reject(*, model: RegisteredModel, approval_id: int, actor: AbstractBaseUser | None) -> AliasApproval:
    """An admin rejects a pending request, or the person who asked withdraws it; nothing moves."""
    with transaction.atomic():
        locked = RegisteredModel.objects.select_for_update().select_related("team").get(pk=model.pk)
        approval = _pending(locked=locked, approval_id=approval_id)
        own = actor is not None and approval.requested_by_id == actor.pk
        if not own and not _is_admin(user=actor, team=locked.team):
            raise Forbidden("alias_guarded", f"Only an admin of team {locked.team.name} (or the person who "
                            "asked) rejects a request.")
        approval.status, approval.decided_by, approval.decided_at = ApprovalStatus.REJECTED, actor, timezone.now()
        approval.save(update_fields=["status", "decided_by", "decided_at"])
        audit_record(action="model.alias_move_rejected", actor=actor, team=locked.team, obj=locked,
                     object_type="model", after={"alias": approval.alias, "version": approval.version.number,
                                                 "approval": approval.pk})
    return approval


def _named(number: int | None) -> str:
    return f"v{number}" if number is not None else "no version"


def alias_drop(*, model: RegisteredModel, alias: str, note: str = "", actor: AbstractBaseUser | None) -> None:
    """Remove `alias` (404 when the model has none of that name); the drop goes into the history."""
    _check_alias(model=model, alias=alias, actor=actor)
    with transaction.atomic():
        locked = RegisteredModel.objects.select_for_update().get(pk=model.pk)
        current = ModelAlias.objects.select_related("version").filter(model=locked, name=alias).first()
        if current is None:
            raise NotFound("alias_missing", f"Model {model.name!r} has no alias {alias!r}.")
        AliasMove.objects.create(model=locked, alias=alias, from_version=current.version.number, to_version=None,
                                 actor=actor, note=note)
        audit_record(action="model.alias_dropped", actor=actor, team=locked.team, obj=locked, object_type="model",
                     before={"alias": alias, "version": current.version.number}, after={"alias": alias, "version": None,
                                                                                       "note": note})
        current.delete()
