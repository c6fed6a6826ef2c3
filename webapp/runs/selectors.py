"""Reads of the runs app: the runs a user may see, metric series, files of a run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from webapp.accounts.models import Membership

from . import conf
from .models import ExportStatus, MetricPoint, Run, RunStatus


def runs_visible_to(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Run]:
    """Runs of the user's teams (none for anonymous users)."""
    if not user.is_authenticated:
        return Run.objects.none()
    return Run.objects.filter(team__in=Membership.objects.filter(user=user).values("team_id"))


def run_for_user(*, user: AbstractBaseUser | AnonymousUser, run_id: int) -> Run | None:
    """The run if the user may see it, else None (a foreign run and a missing one look alike)."""
    return runs_visible_to(user=user).filter(pk=run_id).first()


def run_data_recipe(run: Run) -> dict[str, Any]:
    """The DataRecipe JSON a run trains on; rebuilt from its dataset when the run has none."""
    if run.recipe:
        return run.recipe
    from webapp.datasets.selectors import dataset_recipe

    return dataset_recipe(dataset=run.dataset)


def run_export_dir(run: Run) -> Path:
    """Folder of the run's export (model.safetensors, model.py, ...)."""
    return conf.run_dir(run.pk) / "export"


def run_export_zip(run: Run) -> Path:
    """Where the zip of the run's export is kept."""
    return conf.run_dir(run.pk) / "export.zip"


def run_exports(run: Run) -> dict[str, Any]:
    """What a run offers for download, from its files and its export task's status.

    {"status": none|pending|ready|failed, "safetensors", "python", "config", "zip": bool,
     "onnx": true | false | "pending" | "unavailable", "note": why ONNX is unavailable ("" otherwise)}.
    onnx is false when nothing is making it (not succeeded, or never asked for): asking for the
    download then queues it once. The zip is made on first download when the task has not made it.
    """
    folder = run_export_dir(run)
    succeeded = run.status == RunStatus.SUCCEEDED

    def has(path: Path) -> bool:
        return succeeded and path.is_file()

    complete = has(folder / "export.json")
    onnx: bool | str = False
    note = ""
    if has(folder / "model.onnx"):
        onnx = True
    elif succeeded:
        manifest_note: dict[str, Any] = {}
        if complete:
            from engine.export import read_export_manifest

            manifest_note = read_export_manifest(folder).get("onnx", {}) or {}
        if "errors" in manifest_note:
            onnx, note = "unavailable", str(manifest_note.get("note") or "this graph has no ONNX export")
        elif run.export_status == ExportStatus.PENDING:
            onnx = "pending"
        elif run.export_status == ExportStatus.FAILED:
            onnx, note = "unavailable", run.export_error or "the export failed"
    return {
        "status": run.export_status,
        "safetensors": has(folder / "model.safetensors"),
        "python": has(folder / "model.py"),
        "config": has(folder / "config.json"),
        "zip": complete or has(run_export_zip(run)),
        "onnx": onnx,
        "note": note,
    }


def run_download_name(run: Run, suffix: str) -> str:
    """A file name for downloads: `<graph-name>-run<id><suffix>`, safe in a header."""
    name = getattr(getattr(run.graph_revision, "graph", None), "name", "") or "model"
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._") or "model"
    return f"{slug[:80]}-run{run.pk}{suffix}"


def downsample(points: list[tuple[int, float, float | None]], max_points: int) -> list[tuple[int, float, float | None]]:
    """At most `max_points` of (step, epoch, value), keeping the first, the last and each bucket's min and max.

    The points between the first and the last are cut into (max_points - 2) // 2 buckets of
    consecutive steps; each bucket keeps its lowest and highest value (in step order), so
    spikes survive however far a chart zooms out.
    """
    if len(points) <= max_points:
        return points
    if max_points < 3:
        return [points[0], points[-1]][:max(max_points, 1)]
    first, middle, last = points[0], points[1:-1], points[-1]
    buckets = max((max_points - 2) // 2, 1)
    size = len(middle) / buckets
    kept: list[tuple[int, float, float | None]] = [first]
    for b in range(buckets):
        bucket = middle[int(b * size): int((b + 1) * size)]
        finite = [p for p in bucket if p[2] is not None]
        if not finite:
            if bucket:
                kept.append(bucket[0])
            continue
        low = min(finite, key=lambda p: p[2])  # type: ignore[arg-type, return-value]
        high = max(finite, key=lambda p: p[2])  # type: ignore[arg-type, return-value]
        kept.extend(sorted({low, high}, key=lambda p: p[0]))
    kept.append(last)
    return kept[:max_points] if len(kept) > max_points else kept


def run_metric_series(
    *, run: Run, keys: list[str] | None = None, max_points: int | None = None
) -> dict[str, dict[str, list[Any]]]:
    """{key: {"step": [...], "epoch": [...], "value": [...]}} of a run, each series downsampled."""
    points = MetricPoint.objects.filter(run=run)
    if keys:
        points = points.filter(key__in=keys)
    by_key: dict[str, list[tuple[int, float, float | None]]] = {}
    for key, step, epoch, value in points.order_by("key", "step").values_list("key", "step", "epoch", "value"):
        by_key.setdefault(key, []).append((step, epoch, value))
    series: dict[str, dict[str, list[Any]]] = {}
    for key, rows in by_key.items():
        if max_points is not None:
            rows = downsample(rows, max_points)
        series[key] = {
            "step": [r[0] for r in rows],
            "epoch": [r[1] for r in rows],
            "value": [r[2] for r in rows],
        }
    return series


def run_metric_keys(*, run: Run) -> list[str]:
    """The metric names a run has points for."""
    return list(MetricPoint.objects.filter(run=run).order_by("key").values_list("key", flat=True).distinct())
