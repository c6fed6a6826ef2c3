"""Celery tasks of runs: train, explain, export, reap. Thin: load, check, call the engine, record.

Each task takes ids, returns at once when its work is done, cancelled or owned by another
delivery (a redelivered message is harmless), and turns exceptions into messages a user can act on.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from celery import signals
from django.db import close_old_connections

from webapp.celery import app
from webapp.runs import conf
from webapp.runs.models import (
    TERMINAL_STATUSES,
    Checkpoint,
    Explanation,
    ExplanationStatus,
    Run,
    RunStatus,
)
from webapp.runs.selectors import run_data_recipe, run_export_dir, run_export_zip
from webapp.runs.services import (
    explanation_finish,
    explanation_mark_running,
    run_cancel,
    run_export_finish,
    run_finish,
    run_lease_take,
    run_log,
    run_reap,
)
from webapp.runs.sink import RunCallbacks, RunRecorder

logger = logging.getLogger(__name__)


def _user_message(exc: BaseException) -> str:
    """A message a user can act on: the engine's own message for its errors."""
    from engine.data import DataError
    from engine.train import ConfigError, TrainingError

    if isinstance(exc, TrainingError | DataError | ConfigError | ValueError):
        return str(exc)
    return f"internal error while training ({type(exc).__name__}: {exc}); the administrators have the details"


@app.task(name="runs.train", bind=True, acks_late=True, reject_on_worker_lost=True)
def train_run(self: Any, run_id: int) -> str:
    """Train a run (or resume it from its last checkpoint) while holding its lease."""
    from engine.data import load_dataset
    from engine.train import train

    run = Run.objects.select_related("graph_revision", "dataset").filter(pk=run_id).first()
    if run is None:
        return "missing"
    if run.status in TERMINAL_STATUSES:
        return "done"
    if run.cancel_requested and run.status != RunStatus.RUNNING:
        run_cancel(run=run)
        return "cancelled"
    token = run_lease_take(run_id=run_id, worker=self.request.hostname or "worker")
    if token is None:
        return "leased elsewhere"

    folder = conf.run_dir(run_id)
    resume_from = _resume_point(run)
    recorder = RunRecorder(run_id, token)
    recorder.progress(step=run.step, epoch=run.epoch, total_steps=run.total_steps)
    recorder.start()
    callbacks = RunCallbacks(recorder)
    try:
        splits = load_dataset(run_data_recipe(run))
        result = train(
            run.graph_revision.spec, splits, run.config,
            out_dir=folder, callbacks=[callbacks], sink=recorder,
            should_stop=recorder.should_stop, resume_from=resume_from,
        )
    except Exception as exc:
        logger.exception("run %s failed", run_id)
        recorder.close()
        if not recorder.lease_lost:
            message = _user_message(exc)
            run_finish(run_id=run_id, lease_token=token, status=RunStatus.FAILED, detail="training failed", error=message)
        return "failed"
    recorder.close()
    if recorder.lease_lost:
        return "lease lost"  # another delivery owns the run now; it records the outcome
    if result.status == "cancelled":
        run_finish(
            run_id=run_id, lease_token=token, status=RunStatus.CANCELLED,
            detail=f"cancelled at step {result.steps}", final_metrics=_jsonable(result.metrics),
            extra={"step": result.steps, "cancel_observed_step": recorder.cancel_observed_step},
        )
        return "cancelled"
    try:
        _export(run, result.model, splits.info, result.metrics, onnx=False)
    except Exception as exc:
        logger.exception("run %s: export failed", run_id)
        run_log(run_id=run_id, level="warning", message=f"export failed: {exc}")
    detail = "stopped early" if result.status == "stopped_early" else "training finished"
    # run_finish also queues runs.export (ONNX and the zip, on the short queue), once.
    run_finish(run_id=run_id, lease_token=token, status=RunStatus.SUCCEEDED, detail=detail,
               final_metrics=_jsonable(result.metrics), extra={"step": result.steps})
    return "succeeded"


def _resume_point(run: Run) -> Path | None:
    """The newest checkpoint recorded in the database whose folder is complete on disk.

    Not simply the newest folder: a worker killed right after writing a checkpoint may not have
    stored the metric points before it yet; resuming from the last *recorded* checkpoint redoes
    those steps, so the stored series has no gap.
    """
    for path in Checkpoint.objects.filter(run=run).order_by("-step").values_list("path", flat=True):
        if (Path(path) / "state.json").is_file():
            return Path(path)
    return None


def _jsonable(metrics: dict[str, Any]) -> dict[str, Any]:
    """Metrics as plain JSON (NaN becomes None)."""
    from webapp.runs.events import finite_or_none

    out: dict[str, Any] = {}
    for key, value in metrics.items():
        if isinstance(value, bool | str) or value is None:
            out[key] = value
        elif isinstance(value, int | float):
            out[key] = value if isinstance(value, int) else finite_or_none(value)
        elif isinstance(value, list | tuple):
            out[key] = [finite_or_none(v) if isinstance(v, float) else v for v in value]
        else:
            try:
                out[key] = finite_or_none(float(value))
            except (TypeError, ValueError):
                out[key] = str(value)
    return out


def _export(run: Run, model: Any, info: Any, metrics: dict[str, Any], *, onnx: bool) -> Path:
    """Write the run's export folder (safetensors, model.py, config, optionally ONNX) atomically."""
    from engine.atomic import atomic_dir
    from engine.export import export_dir

    final = run_export_dir(run)
    with atomic_dir(final) as staging:
        export_dir(model, run.graph_revision.spec, run.config, _jsonable(metrics), staging,
                   data_info=info, onnx=onnx)
    return final


def _trained_model(run: Run) -> Any:
    """The model of a succeeded run (eval mode), rebuilt from its export folder."""
    from engine.export import load_exported

    _, model = load_exported(run_export_dir(run))
    model.eval()
    return model


def _export_data_info(run: Run) -> Any:
    """The DatasetInfo the export was made with (data.json), or the dataset's, reloaded."""
    import json

    from engine.data import DatasetInfo, load_dataset

    data_json = run_export_dir(run) / "data.json"
    if data_json.is_file():
        try:
            return DatasetInfo.from_json(json.loads(data_json.read_text()))
        except (TypeError, ValueError):
            pass
    return load_dataset(run_data_recipe(run)).info


@app.task(name="runs.export", acks_late=True, reject_on_worker_lost=True)
def export_run(run_id: int) -> str:
    """Add ONNX (where the graph allows it) and the zip to a succeeded run's export folder."""
    from engine.export import read_export_manifest, zip_export

    run = Run.objects.select_related("graph_revision", "dataset").filter(pk=run_id).first()
    if run is None or run.status != RunStatus.SUCCEEDED:
        return "not exportable"
    folder = run_export_dir(run)
    zip_path = run_export_zip(run)
    try:
        onnx_note = read_export_manifest(folder).get("onnx", {})
        if not (onnx_note.get("exported") or "errors" in onnx_note):  # ONNX not tried yet
            _export(run, _trained_model(run), _export_data_info(run), run.final_metrics or {}, onnx=True)
        zip_export(folder, dest=zip_path)
    except Exception as exc:
        logger.warning("run %s: export failed: %s", run_id, exc)
        run_log(run_id=run_id, level="warning", message=f"export failed: {exc}")
        run_export_finish(run_id=run_id, error=f"export failed: {exc}")
        return "failed"
    note = read_export_manifest(folder).get("onnx", {})
    if not note.get("exported"):
        run_log(run_id=run_id, level="info", message=f"no ONNX file for this graph: {note.get('note', 'not supported')}")
    run_export_finish(run_id=run_id)
    return "exported"


@app.task(name="runs.explain", acks_late=True, reject_on_worker_lost=True)
def explain_run(explanation_id: int) -> str:
    """Compute one explanation with the run's trained model."""
    import torch

    from engine.data import load_dataset
    from engine.explain import explain

    explanation = Explanation.objects.select_related("run", "run__graph_revision", "run__dataset").filter(
        pk=explanation_id
    ).first()
    if explanation is None:
        return "missing"
    if explanation.status in (ExplanationStatus.SUCCEEDED, ExplanationStatus.FAILED):
        return "done"
    if not explanation_mark_running(explanation_id=explanation_id):
        return "done"
    run = explanation.run
    try:
        model = _trained_model(run)
        splits = load_dataset(run_data_recipe(run))
        info = splits.info
        sample = explanation.sample
        if "index" in sample:
            test_x = splits.test.x
            index = int(sample["index"])
            if index >= len(test_x):
                raise ValueError(f"index {index} is out of range: the test split has {len(test_x)} rows")
            x = test_x[index]
        else:
            raw = torch.as_tensor(sample["input"], dtype=torch.float32)
            if list(raw.shape) != list(info.feature_shape):
                raise ValueError(f"input has shape {list(raw.shape)}, the model needs {list(info.feature_shape)}")
            x = info.normalize(raw.unsqueeze(0))[0]
        result = explain(
            model, x, method=explanation.method, target=explanation.target,
            layer=explanation.layer or None,
            feature_names=info.feature_names or None, task=info.task,
            display=info.denormalize(x.unsqueeze(0))[0],
        )
        folder = conf.run_dir(run.pk) / "explanations"
        folder.mkdir(parents=True, exist_ok=True)
        png = folder / f"{explanation_id}.png"
        png.write_bytes(result.png)
        explanation_finish(explanation_id=explanation_id, result=result.to_json(include_png=False), png_path=str(png))
    except Exception as exc:
        logger.warning("explanation %s failed: %s", explanation_id, exc)
        explanation_finish(explanation_id=explanation_id, result=None, error=str(exc))
        return "failed"
    return "succeeded"


@app.task(name="runs.reap")
def reap_runs() -> list[int]:
    """Interrupt and requeue runs whose worker stopped heartbeating (for `celery beat`)."""
    return run_reap()


# --- a reaper on a timer inside every worker (so `make run` needs no beat process) ------------

_reaper_started = threading.Event()


def _reaper_loop() -> None:
    interval = float(conf.get("RUNS_REAP_SECONDS"))
    while True:
        try:
            close_old_connections()
            run_reap()
        except Exception:
            logger.exception("reaper failed")
        time.sleep(interval)


@signals.worker_ready.connect
def _start_reaper(**_: Any) -> None:
    """Start this worker's reaper thread (once)."""
    if _reaper_started.is_set():
        return
    _reaper_started.set()
    threading.Thread(target=_reaper_loop, name="runs-reaper", daemon=True).start()
