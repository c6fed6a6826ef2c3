"""Reads of the registry: where a version's files are, a model's versions, aliases and history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from .models import AliasMove, ModelAlias, ModelVersion, RegisteredModel


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
    """The model's alias moves, newest first: [{alias, from_version, to_version, actor, note, at}]."""
    moves = AliasMove.objects.filter(model=model).select_related("actor")[:limit]
    return [{"alias": m.alias, "from_version": m.from_version, "to_version": m.to_version,
             "actor": m.actor.username if m.actor else None, "note": m.note, "at": m.at} for m in moves]


def version_files(version: ModelVersion) -> list[str]:
    """The names of the files the version keeps."""
    folder = version_folder(model_id=version.model_id, number=version.number)
    return sorted(p.name for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
