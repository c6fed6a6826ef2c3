"""Writes of the registry: models, versions copied from a run's export, alias moves with history.

Every alias move is one transaction: the alias row and its AliasMove (who, when, from -> to,
note) are written together, under the model's row lock, so two moves never interleave and the
history is never missing a move. `production` is moved or dropped only by a team admin; when the
team asks for it, a move of `production` is a request that a second admin approves.
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
    _announce_aliases(locked.pk)
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
    approval = (AliasApproval.objects.select_for_update(of=("self",)).select_related("version", "requested_by")
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
        _announce_aliases(locked.pk)


# Formats for other runtimes (engine/export/formats.py), built by a "registry.formats" job.
FORMAT_NAMES = ("pt2", "int8", "aoti")


def _version_recipe(version: ModelVersion) -> dict[str, Any]:
    """The DataRecipe the version's weights were trained on: its run's, else its dataset's with
    the transforms and split kept in the version's data.json (the run may be gone)."""
    import json

    from webapp.datasets.models import Dataset
    from webapp.datasets.selectors import dataset_source
    from webapp.runs.selectors import run_data_recipe

    if version.run is not None and (version.run.recipe or version.run.dataset_id):
        return run_data_recipe(version.run)
    dataset = Dataset.objects.filter(pk=(version.source or {}).get("dataset")).first()
    if dataset is None:
        raise Conflict("no_dataset", f"Version {version.number}'s dataset is gone (or it holds imported weights): "
                       "there is no test split to measure its formats on.")
    data_json = version_folder(model_id=version.model_id, number=version.number) / "data.json"
    kept = json.loads(data_json.read_text(encoding="utf-8")).get("recipe") or {} if data_json.is_file() else {}
    return {**{k: v for k, v in kept.items() if k in ("transforms", "split")}, "source": dataset_source(dataset=dataset)}


def version_formats_check(*, version: ModelVersion, formats: list[str]) -> None:
    """Refuse, before any work, formats that cannot be built: an unknown name (400 naming
    `formats`), a version without weights (409), or without a dataset to measure on (409)."""
    if not formats:
        raise DomainError("invalid", "Name at least one format.", field="formats")
    unknown = [f for f in formats if f not in FORMAT_NAMES]
    if unknown:
        raise DomainError("invalid", f"Unknown format {unknown[0]!r}; one of {', '.join(FORMAT_NAMES)}.",
                          field="formats")
    folder = version_folder(model_id=version.model_id, number=version.number)
    if not (folder / "model.safetensors").is_file():
        raise Conflict("version_files_missing", f"Version {version.number} has no model.safetensors.")
    _version_recipe(version)


def version_formats_request(*, version: ModelVersion, formats: list[str], user: Any = None) -> Any:
    """Queue a "registry.formats" job building `formats` of the version (after the checks)."""
    from webapp.jobs.services import job_create
    from webapp.queues import REGISTRY_FORMATS

    formats = list(dict.fromkeys(formats))
    version_formats_check(version=version, formats=formats)
    return job_create(kind=REGISTRY_FORMATS, team=version.model.team, owner=user, subject_id=version.pk,
                      params={"formats": formats})


def version_formats_build(
    *, version: ModelVersion, formats: list[str], progress: Any = None, repeats: int = 200,
) -> dict[str, Any]:
    """Build each format beside the version's files, measure it against fp32 on the test split,
    and merge the figures into `version.formats` (under the row's lock); returns what was built."""
    from datetime import UTC, datetime

    from engine.data import load_dataset
    from engine.export import load_exported
    from engine.export.formats import build_formats

    version_formats_check(version=version, formats=formats)
    folder = version_folder(model_id=version.model_id, number=version.number)
    spec, model = load_exported(folder)
    splits = load_dataset(_version_recipe(version))
    if len(splits.test) == 0:
        raise DomainError("no_test_split", "This version's dataset has no test split to measure formats on.")
    built = build_formats(model, spec, folder, formats, test=splits.test, task=splits.info.task,
                          repeats=repeats, progress=progress)
    at = datetime.now(UTC).isoformat(timespec="seconds")
    for figures in built.values():
        figures["built_at"] = at
    with transaction.atomic():
        locked = ModelVersion.objects.select_for_update().get(pk=version.pk)
        locked.formats = {**(locked.formats or {}), **built}
        locked.save(update_fields=["formats"])
    version.formats = locked.formats
    return built


def version_served_name(version: ModelVersion) -> str:
    """The name the model server serves a model under: `<model id>-<slug of its name>`."""
    from django.utils.text import slugify

    return f"{version.model_id}-{slugify(version.model.name) or 'model'}"


def version_inference_service(version: ModelVersion) -> dict[str, Any]:
    """The KServe `serving.kserve.io/v1beta1` InferenceService serving this version on a cluster.

    Its predictor is a custom container: the Netloom image (NETLOOM_IMAGE) running the standalone
    model server on the version's folder, which KServe's storage initializer mounts at
    /mnt/models from `STORAGE_URI` (the PersistentVolumeClaim NETLOOM_MEDIA_CLAIM holding
    MEDIA_ROOT). docs/deploy.md shows the steps.
    """
    from django.conf import settings
    from django.utils.text import slugify

    served = version_served_name(version)
    # A DNS-1123 label starting with a letter, at most 63 characters (slugify keeps "_").
    slug = re.sub(r"-+", "-", slugify(version.model.name).replace("_", "-")).strip("-")
    name = f"netloom-{version.model_id}-{slug}"[:55].rstrip("-") + f"-v{version.number}"
    storage = f"pvc://{settings.NETLOOM_MEDIA_CLAIM}/registry/{version.model_id}/{version.number}"
    probe = {"httpGet": {"path": "/v2/health/ready", "port": 8080}, "initialDelaySeconds": 5, "periodSeconds": 10}
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/name": "netloom", "app.kubernetes.io/component": "predictor",
                       "netloom.io/model": str(version.model_id), "netloom.io/version": str(version.number)},
            "annotations": {"netloom.io/served-name": served, "netloom.io/team": version.model.team.name},
        },
        "spec": {
            "predictor": {
                "minReplicas": 1,
                "maxReplicas": 1,
                "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "fsGroup": 10001},
                "containers": [{
                    "name": "kserve-container",
                    "image": settings.NETLOOM_IMAGE,
                    "command": ["python", "-m", "serving.standalone", "--model_dir", "/mnt/models",
                                "--model_name", served],
                    "env": [{"name": "STORAGE_URI", "value": storage}],
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": "1", "memory": "2Gi"},
                                  "limits": {"cpu": "2", "memory": "4Gi"}},
                    "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False,
                                        "capabilities": {"drop": ["ALL"]}},
                    "readinessProbe": probe,
                    "livenessProbe": {**probe, "httpGet": {"path": "/v2/health/live", "port": 8080}},
                }],
            },
        },
    }
