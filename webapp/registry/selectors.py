"""Reads of the registry: where a version's files are, a model's versions, aliases and history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from .models import (
    AliasApproval,
    AliasMove,
    ApprovalStatus,
    ModelAlias,
    ModelVersion,
    RegisteredModel,
)


def registry_root() -> Path:
    """MEDIA_ROOT/registry: one folder per model, one per version."""
    return Path(settings.MEDIA_ROOT) / "registry"


def version_folder(*, model_id: int, number: int) -> Path:
    """Where version `number` of model `model_id` keeps its files."""
    return registry_root() / str(int(model_id)) / str(int(number))


def model_aliases(*, model: RegisteredModel) -> dict[str, int]:
    """{alias: version number} of the model."""
    return dict(ModelAlias.objects.filter(model=model).values_list("name", "version__number"))


def model_history(*, model: RegisteredModel, limit: int = 200) -> list[dict[str, Any]]:
    """The model's alias moves, newest first: [{alias, from_version, to_version, actor, approved_by,
    note, at}] (approved_by: the second admin, when the move was approved)."""
    moves = AliasMove.objects.filter(model=model).select_related("actor", "approved_by")[:limit]
    return [{"alias": m.alias, "from_version": m.from_version, "to_version": m.to_version,
             "actor": m.actor.username if m.actor else None,
             "approved_by": m.approved_by.username if m.approved_by else None,
             "note": m.note, "at": m.at} for m in moves]


def _approval(a: AliasApproval, aliases: dict[str, int]) -> dict[str, Any]:
    return {
        "id": a.pk, "alias": a.alias, "version": a.version.number, "from_version": a.from_version,
        "current_version": aliases.get(a.alias), "note": a.note, "status": a.status,
        "stale": a.status == ApprovalStatus.PENDING and aliases.get(a.alias) != a.from_version,
        "requested_by": a.requested_by.username if a.requested_by else None,
        "decided_by": a.decided_by.username if a.decided_by else None,
        "created_at": a.created_at, "decided_at": a.decided_at,
    }


def model_approvals(*, model: RegisteredModel, status: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
    """The model's requests to move a guarded alias, newest first, each with `stale` (a pending
    request whose alias moved since: approving it is refused) and `current_version`."""
    aliases = model_aliases(model=model)
    rows = AliasApproval.objects.filter(model=model).select_related("version", "requested_by", "decided_by")
    if status:
        rows = rows.filter(status=status)
    return [_approval(a, aliases) for a in rows[:limit]]


def approval_row(*, approval: AliasApproval) -> dict[str, Any]:
    """One request as `model_approvals` answers it."""
    fresh = AliasApproval.objects.select_related("version", "requested_by", "decided_by").get(pk=approval.pk)
    return _approval(fresh, model_aliases(model=approval.model))


def version_files(version: ModelVersion) -> list[str]:
    """The names of the files the version keeps."""
    folder = version_folder(model_id=version.model_id, number=version.number)
    return sorted(p.name for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def served_name(model: RegisteredModel) -> str:
    """The model's name on the model server: `<id>-<slug of its name>` (`7-iris-classifier`)."""
    from django.utils.text import slugify

    return f"{model.pk}-{slugify(model.name) or 'model'}"


def served_models() -> list[dict[str, Any]]:
    """Every model some alias names a version of, as the model server needs it:
    [{"model", "team", "served_name", "aliases": {alias: n}, "folders": {n: path}}]."""
    rows = ModelAlias.objects.select_related("model", "version").order_by("model_id", "name")
    out: dict[int, dict[str, Any]] = {}
    for alias in rows:
        model = alias.model
        entry = out.setdefault(model.pk, {"model": model.pk, "team": model.team_id, "served_name": served_name(model),
                                          "aliases": {}, "folders": {}})
        number = alias.version.number
        entry["aliases"][alias.name] = number
        entry["folders"][number] = str(version_folder(model_id=model.pk, number=number))
    return list(out.values())


def model_endpoint_path(*, model: RegisteredModel, default_alias: str = "production") -> str | None:
    """The served path of the model's default alias; None while no such alias exists."""
    if not ModelAlias.objects.filter(model=model, name=default_alias).exists():
        return None
    return f"/v2/models/{served_name(model)}/infer"
