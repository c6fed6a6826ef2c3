"""Exports of a run's weights: the export folder written in one rename, ONNX and the zip added by
the run's "runs.export" job (workers/inference.py), downloads of a run's or of one checkpoint's
export.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from webapp.audit.services import audit_record
from webapp.errors import Conflict, DomainError
from webapp.jobs.models import UNFINISHED_STATES, Job
from webapp.queues import RUNS_EXPORT

from .. import conf
from ..models import Run, RunStatus
from ..scheduling.sends import export_job_create
from ..selectors import (
    run_checkpoint_row,
    run_download_name,
    run_export_dir,
    run_export_zip,
    run_exports,
    run_module_name,
)
from ..services import metrics_json
from ..stream.events import event_emit
from .weights import run_checkpoint_model, run_export_data_info, run_trained_model


def run_export_write(
    *, run: Run, model: Any, data_info: Any, metrics: dict[str, Any], onnx: bool,
    checkpoint: dict[str, Any] | None = None, folder: Path | None = None,
) -> Path:
    """Write the run's export folder (safetensors, model.py, JSON; ONNX when asked) in one rename.

    A reader (a download, the export task) sees the old folder or the new one, never half.
    `checkpoint` ({name, step, epoch}) says which checkpoint's weights `model` holds; export.json
    keeps it (null: the weights at the end of training). `folder` is another place than the
    run's export (a checkpoint's own export, run_checkpoint_export).
    """
    import json

    from engine.atomic import atomic_dir
    from engine.export import export_dir

    final = folder or run_export_dir(run)
    with atomic_dir(final) as staging:
        export_dir(model, run.graph_revision.spec, run.config, metrics_json(metrics), staging,
                   data_info=data_info, onnx=onnx)
        manifest = json.loads((staging / "export.json").read_text(encoding="utf-8"))
        manifest["checkpoint"] = checkpoint
        (staging / "export.json").write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
    return final


def run_checkpoint_export(
    *, run: Run, name: str, fmt: str, actor: AbstractBaseUser | None = None, audit: bool = True
) -> RunDownload:
    """The file for `GET /api/runs/<id>/checkpoints/<name>/export/?format=`, built on first ask.

    A download is recorded in the audit log (`run.exported` by `actor`); `audit=False` for a
    caller that only reads the files (registering a version records that instead).

    The checkpoint's weights are loaded into the run's built graph and written with
    run_export_write into `runs/<id>/checkpoints-export/<name>/` (ONNX too when asked for;
    the zip beside it). A folder older than the checkpoint (a `best` written again) is rebuilt.
    """
    from engine.export import read_export_manifest, zip_export

    if fmt not in EXPORT_FORMATS:
        raise DomainError("invalid", f"Unknown format {fmt!r}; one of {', '.join(EXPORT_FORMATS)}.",
                          fields={"format": [f"One of {', '.join(EXPORT_FORMATS)}."]})
    row = run_checkpoint_row(run=run, name=name)
    folder = conf.run_dir(run.pk) / "checkpoints-export" / row.name
    filename, suffix, content_type = EXPORT_FORMATS[fmt]
    manifest_path = folder / "export.json"
    note = {"name": row.name, "step": int(row.step), "epoch": float(row.epoch)}
    fresh = manifest_path.is_file() and _manifest_checkpoint(folder) == note
    if not fresh or (fmt == "onnx" and not (folder / "model.onnx").is_file()
                     and "errors" not in read_export_manifest(folder).get("onnx", {})):
        model = run_checkpoint_model(run=run, name=row.name)
        run_export_write(run=run, model=model, data_info=run_export_data_info(run=run), metrics=row.metrics or {},
                         onnx=fmt == "onnx" or (fresh and (folder / "model.onnx").is_file()),
                         checkpoint=note, folder=folder)
        (folder.parent / f"{row.name}.zip").unlink(missing_ok=True)
    if fmt == "zip":
        path = folder.parent / f"{row.name}.zip"
        if not path.is_file():
            zip_export(folder, dest=path)
    else:
        path = folder / filename
    if not path.is_file():
        onnx_note = read_export_manifest(folder).get("onnx", {})
        raise Conflict("onnx_unavailable", f"This graph has no ONNX export: {onnx_note.get('note')}.",
                       extra={"errors": onnx_note.get("errors", [])})
    download = (run_module_name(run, row.name) if fmt == "python"
                else run_download_name(run, f"-{row.name}{suffix}"))
    if audit:
        run_export_record(run=run, actor=actor, fmt=fmt, checkpoint=row.name)
    return RunDownload(path=path, filename=download, content_type=content_type)


def run_export_record(*, run: Run, actor: AbstractBaseUser | None, fmt: str, checkpoint: str | None = None) -> None:
    """Record in the audit log that `actor` downloaded the run's export (or one checkpoint's)."""
    with transaction.atomic():
        audit_record(action="run.exported", actor=actor, team=run.team, obj=run, object_type="run",
                     after={"format": fmt, "checkpoint": checkpoint})


def _manifest_checkpoint(folder: Path) -> Any:
    import json

    try:
        return json.loads((folder / "export.json").read_text(encoding="utf-8")).get("checkpoint")
    except (OSError, ValueError):
        return None


def run_export_complete(*, run: Run) -> dict[str, Any]:
    """Add ONNX (where the graph allows it; tried once) and the zip to a succeeded run's export.

    Returns the manifest's ONNX note (`exported`, `note`, `errors`).
    """
    from engine.export import read_export_manifest, zip_export

    folder = run_export_dir(run)
    manifest = read_export_manifest(folder)
    onnx_note = manifest.get("onnx", {})
    if not (onnx_note.get("exported") or "errors" in onnx_note):  # ONNX not tried yet
        # The same weights again (the best checkpoint's, when the export holds them): say so again.
        run_export_write(run=run, model=run_trained_model(run=run), data_info=run_export_data_info(run=run),
                         metrics=run.final_metrics or {}, onnx=True, checkpoint=manifest.get("checkpoint"))
    zip_export(folder, dest=run_export_zip(run))
    return read_export_manifest(folder).get("onnx", {})


EXPORT_FORMATS: dict[str, tuple[str, str, str]] = {
    # format: (file in the export folder, suffix of the download, content type)
    "safetensors": ("model.safetensors", ".safetensors", "application/octet-stream"),
    "python": ("model.py", ".py", "text/x-python"),
    "onnx": ("model.onnx", ".onnx", "application/octet-stream"),
    "config": ("config.json", "-config.json", "application/json"),
    "zip": ("", ".zip", "application/zip"),
}


@dataclass(frozen=True)
class RunDownload:
    """A file of a run's export to send: where it is, the name to send it under, its type."""

    path: Path
    filename: str
    content_type: str


def run_export_download(*, run: Run, fmt: str, actor: AbstractBaseUser | None = None) -> RunDownload:
    """The file for `GET /api/runs/<id>/export/?format=fmt`, made first when it can be; recorded in
    the audit log as `run.exported` by `actor`.

    The zip is built (atomically) on first download when the export job has not made it. A
    missing ONNX file creates the export job (once while pending: run_export_request) and
    raises Conflict "export_pending" carrying the run's `exports`; a graph without an ONNX form
    raises Conflict "onnx_unavailable" with the exporter's `errors`.
    """
    from engine.export import read_export_manifest, zip_export

    if fmt not in EXPORT_FORMATS:
        raise DomainError("invalid", f"Unknown format {fmt!r}; one of {', '.join(EXPORT_FORMATS)}.",
                          fields={"format": [f"One of {', '.join(EXPORT_FORMATS)}."]})
    if run.status != RunStatus.SUCCEEDED:
        raise _not_trained(run)
    filename, suffix, content_type = EXPORT_FORMATS[fmt]
    folder = run_export_dir(run)
    complete = (folder / "export.json").is_file()
    if fmt == "zip":
        path = run_export_zip(run)
        if not path.is_file() and complete:
            zip_export(folder, dest=path)
    else:
        path = folder / filename
    if not path.is_file():
        if fmt == "onnx" and complete:
            note = read_export_manifest(folder).get("onnx", {})
            if "errors" in note:
                raise Conflict("onnx_unavailable", f"This graph has no ONNX export: {note.get('note')}.",
                               extra={"errors": note.get("errors", [])})
            # Idempotent: queued once while pending; the stream's `export` event says when it is done.
            run_export_request(run=run)
            raise Conflict("export_pending", "The ONNX file is being made; try again in a few seconds.",
                           extra={"exports": run_exports(run)})
        raise Conflict("export_missing", "This run's export is missing; ask an administrator.")
    # The source is named per run (a second run's download never overwrites the first) and stays a
    # module name (`from mlp_run12 import Net`): underscores, not the other downloads' hyphens.
    name = run_module_name(run) if fmt == "python" else run_download_name(run, suffix)
    run_export_record(run=run, actor=actor, fmt=fmt)
    return RunDownload(path=path, filename=name, content_type=content_type)


def _not_trained(run: Run) -> Conflict:
    """409 for the export of a run that did not succeed; a cancelled or failed run's kept
    checkpoints (newest first, under `checkpoints`) still export one by one, and the message says so."""
    kept = [row.name for row in run.checkpoints.order_by("-step", "-pk") if (Path(row.path) / "state.json").is_file()]
    message = f"Run {run.pk} has not succeeded ({run.status}); it has no export of its own."
    if kept:
        message += (f" Its kept checkpoint{'s' if len(kept) > 1 else ''} ({', '.join(kept)}) export one by one "
                    f"(GET /api/runs/{run.pk}/checkpoints/{kept[0]}/export/).")
    return Conflict("run_not_trained", message, extra={"checkpoints": kept})


def run_export_request(*, run: Run) -> bool:
    """Create the export job (ONNX and the zip) of a succeeded run unless one is pending.

    Idempotent: the run's row is locked while its export jobs are read, so any number of
    requests (two browser tabs, a page reload) create one job until it finishes or fails. A job
    whose message or worker was lost is the jobs framework's to send again or fail
    (webapp/jobs/services.py::jobs_reap). True when this call created it.
    """
    with transaction.atomic():
        locked = Run.objects.select_for_update(of=("self",)).filter(pk=run.pk, status=RunStatus.SUCCEEDED).first()
        if locked is None:
            return False
        if Job.objects.filter(kind=RUNS_EXPORT, subject_id=run.pk, state__in=UNFINISHED_STATES).exists():
            return False
        export_job_create(run=locked)
    return True


def run_export_announce(*, run_id: int) -> None:
    """Announce the export job's outcome (ready or failed: its `exports`) on the run's stream;
    the job type's hooks call it in the transaction that records the outcome."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return
    exports = run_exports(run)
    event_emit(run_id=run_id, event={"type": "export", "status": exports["status"], "exports": exports})


def run_export_checkpoint(*, run: Run) -> str | None:
    """Name of the checkpoint whose weights the run's export holds (export.json), None if not known."""
    import json

    try:
        manifest = json.loads((run_export_dir(run) / "export.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    note = manifest.get("checkpoint")
    return note.get("name") if isinstance(note, dict) else None
