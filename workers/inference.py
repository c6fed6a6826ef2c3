"""Inference work on the workers: the handlers of "runs.explain", "runs.export" and
"runs.evaluate" jobs
(webapp/runs/inference/jobs.py declares the kinds). Thin: load, check, call, record.

A handler that raises JobFailed fails its job; the kind's on_failed hook records the explanation
failed or announces the failed export. A duplicate delivery never reaches a handler (the job is
claimed once), and a handler run again after a lost worker redoes its work idempotently.
"""

from __future__ import annotations

import logging
from typing import Any

from webapp.errors import DomainError
from webapp.jobs.models import Job
from webapp.queues import RUNS_EVALUATE, RUNS_EXPLAIN, RUNS_EXPORT
from webapp.runs.inference.evaluation import run_evaluation_create
from webapp.runs.inference.explanations import (
    explanation_finish,
    explanation_input_prepare,
    explanation_mark_running,
)
from webapp.runs.inference.exports import run_export_complete
from webapp.runs.inference.weights import run_checkpoint_model, run_trained_model
from webapp.runs.models import Explanation, Run, RunStatus
from webapp.runs.selectors import run_data_recipe
from webapp.runs.services import run_log
from workers.jobs import JobFailed, Progress, job_handler

logger = logging.getLogger(__name__)


@job_handler(RUNS_EXPORT)
def export_run_job(job: Job, progress: Progress) -> dict[str, Any]:
    """Add ONNX (where the graph allows it) and the zip to a succeeded run's export folder."""
    run_id = job.subject_id
    run = Run.objects.select_related("graph_revision", "dataset").filter(pk=run_id).first()
    if run is None or run.status != RunStatus.SUCCEEDED:
        return {"run": run_id, "status": "not exportable"}
    try:
        onnx = run_export_complete(run=run)
    except Exception as exc:
        logger.warning("run %s: export failed: %s", run_id, exc)
        run_log(run_id=run.pk, level="warning", message=f"export failed: {exc}")
        raise JobFailed(f"export failed: {exc}", code="export_failed") from exc
    if not onnx.get("exported"):
        run_log(run_id=run.pk, level="info", message=f"no ONNX file for this graph: {onnx.get('note', 'not supported')}")
    return {"run": run.pk, "onnx": bool(onnx.get("exported"))}


@job_handler(RUNS_EXPLAIN)
def explain_job(job: Job, progress: Progress) -> dict[str, Any]:
    """Compute one explanation with the run's trained model (or the checkpoint it names)."""
    from engine.data import load_dataset
    from engine.explain import explain_sample

    explanation_id = job.subject_id
    explanation = Explanation.objects.select_related("run", "run__graph_revision", "run__dataset").filter(
        pk=explanation_id
    ).first()
    if explanation is None:
        return {"explanation": explanation_id, "status": "deleted"}
    if not explanation_mark_running(explanation_id=explanation.pk):
        return {"explanation": explanation.pk, "status": str(explanation.status)}  # already finished
    run = explanation.run
    try:
        splits = load_dataset(run_data_recipe(run))
        sample, test_x = explanation.sample, splits.test.x
        given = sample.get("input") if isinstance(sample, dict) else None
        if isinstance(given, (dict, str)):  # a typed row or an uploaded image: the run's own pipeline
            prepared = explanation_input_prepare(
                run=run, row=given if isinstance(given, dict) else None,
                image=given if isinstance(given, str) else None,
            )
            sample, test_x = {"index": 0}, prepared
        checkpoint = explanation.sample.get("checkpoint") if isinstance(explanation.sample, dict) else None
        model = run_checkpoint_model(run=run, name=checkpoint) if checkpoint else run_trained_model(run=run)
        sample = {k: v for k, v in sample.items() if k != "checkpoint"}
        result = explain_sample(
            model, sample, info=splits.info, test_x=test_x,
            method=explanation.method, target=explanation.target, layer=explanation.layer or None,
        )
    except Exception as exc:
        # The job fails with the message; its on_failed hook records the explanation failed.
        logger.warning("explanation %s failed: %s", explanation_id, exc)
        raise JobFailed(str(exc), code="explain_failed") from exc
    explanation_finish(explanation_id=explanation.pk, result=result.to_json(include_png=False), png=result.png)
    return {"explanation": explanation.pk, "status": "succeeded"}


@job_handler(RUNS_EVALUATE)
def evaluate_job(job: Job, progress: Progress) -> dict[str, Any]:
    """Evaluate the run's final model (or the checkpoint its params name) and store it."""
    run = Run.objects.select_related("graph_revision", "dataset").filter(pk=job.subject_id).first()
    if run is None:
        raise JobFailed(f"Run {job.subject_id} no longer exists.", code="not_found")
    try:
        return run_evaluation_create(run=run, checkpoint=(job.params or {}).get("checkpoint") or None)
    except DomainError as exc:  # the run changed since it was asked for (a checkpoint pruned)
        raise JobFailed(exc.message, code=exc.code) from exc
