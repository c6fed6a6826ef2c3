"""Writes of the registry: models, versions copied from a run's export, alias moves with history.

Every alias move is one transaction: the alias row and its AliasMove (who, when, from -> to,
note) are written together, under the model's row lock, so two moves never interleave and the
history is never missing a move. `production` is moved or dropped only by a team admin.
"""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max

from webapp.accounts.models import Role, Team, role_at_least
from webapp.accounts.selectors import role_in_team
from webapp.errors import Conflict, DomainError, Forbidden, NotFound

from .models import AliasMove, ModelAlias, ModelVersion, RegisteredModel
from .selectors import version_folder

logger = logging.getLogger(__name__)

ALIAS_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
# Aliases only a team admin may move or drop (the model a team runs in production).
GUARDED_ALIASES = frozenset({"production"})
# The files of a run's export a version keeps (ONNX and its notes when the export has them).
VERSION_FILES = ("model.safetensors", "model.py", "predict.py", "preprocess.json", "data.json", "export.json", "config.json",
                 "model.onnx", "metrics.json", "README.md")


def model_create(*, team: Team, name: str, description: str = "", created_by: AbstractBaseUser | None) -> RegisteredModel:
    """A new model of `team` (DomainError name_taken when the team has one of that name)."""
    try:
        with transaction.atomic():
            return RegisteredModel.objects.create(team=team, name=name, description=description, created_by=created_by)
    except IntegrityError:
        raise DomainError("name_taken", f"Team {team.name} already has a model named {name!r}.", field="name") from None


def _source_folder(*, run: Any, checkpoint: str | None) -> tuple[Path, dict[str, Any]]:
    """The export folder holding the weights to register, and the metrics they were recorded with."""
    from webapp.runs.inference.exports import run_checkpoint_export
    from webapp.runs.models import Checkpoint, RunStatus
    from webapp.runs.selectors import run_export_dir

    if checkpoint:
        download = run_checkpoint_export(run=run, name=checkpoint, fmt="safetensors")  # 404 / 409 named
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
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
    return version


def _check_alias(*, model: RegisteredModel, alias: str, actor: AbstractBaseUser | None) -> None:
    if not ALIAS_PATTERN.match(alias):
        raise DomainError("invalid", f"{alias!r} is not an alias: lower-case letters, digits, - and _, "
                          "starting with a letter, at most 40.", field="alias")
    if alias in GUARDED_ALIASES and not role_at_least(role_in_team(user=actor, team=model.team), Role.ADMIN):
        raise Forbidden("alias_guarded", f"Only an admin of team {model.team.name} moves {alias!r}.")


def serving_channel() -> str:
    """The Redis channel the model server listens on for alias moves (serving/registry_link.py)."""
    return f"{settings.NETLOOM_INSTANCE}:serving:aliases"


def _announce_aliases(model_id: int) -> None:
    """After the commit, tell the model server that the model's aliases moved: it reads the
    registry at once instead of at its next poll (the poll stays the fallback: a lost message
    only delays the switch by one poll)."""

    def send() -> None:
        import redis

        try:
            redis.Redis.from_url(settings.REDIS_URL, socket_timeout=0.5, socket_connect_timeout=0.5).publish(
                serving_channel(), str(model_id))
        except redis.RedisError:
            logger.warning("could not announce the alias move of model %s; the model server polls", model_id)

    transaction.on_commit(send)


def alias_set(
    *, model: RegisteredModel, alias: str, number: int, note: str = "", actor: AbstractBaseUser | None,
) -> ModelAlias:
    """Point `alias` at version `number` (created if new); the move goes into the history.

    Moving it to the version it already names changes nothing and records nothing.
    """
    _check_alias(model=model, alias=alias, actor=actor)
    with transaction.atomic():
        locked = RegisteredModel.objects.select_for_update().get(pk=model.pk)
        version = locked.versions.filter(number=number).first()
        if version is None:
            raise NotFound("version_missing", f"Model {model.name!r} has no version {number}.", field="version")
        current = ModelAlias.objects.select_related("version").filter(model=locked, name=alias).first()
        if current is not None and current.version_id == version.pk:
            return current
        before = current.version.number if current is not None else None
        if current is None:
            current = ModelAlias.objects.create(model=locked, name=alias, version=version, updated_by=actor)
        else:
            current.version, current.updated_by = version, actor
            current.save(update_fields=["version", "updated_by", "updated_at"])
        AliasMove.objects.create(model=locked, alias=alias, from_version=before, to_version=number,
                                 actor=actor, note=note)
        _announce_aliases(locked.pk)
    return current


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
        current.delete()
        _announce_aliases(locked.pk)
