"""Evaluations of a run: computed by the engine on the test split, stored as JSON files.

One file per model: `MEDIA_ROOT/runs/<id>/evaluation/final.json` (the trained model, written
by runs.train when the run succeeds) and `checkpoint-<name>.json` for a kept checkpoint
(computed on request: one pass of the model over the test split). A succeeded run from before
evaluations existed gets its final one computed on the first read.

An evaluation asked for is a "runs.evaluate" job (webapp/runs/inference/jobs.py) when the client
prefers an asynchronous answer (`Prefer: respond-async`, RFC 7240: 202 and the job), and is
computed in the request otherwise (200 and the evaluation, as it always was). Both check the same
preconditions first (evaluation_check), so a refusal is the same status either way.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from webapp.errors import Conflict, DomainError, NotFound
from webapp.jobs.models import Job
from webapp.queues import RUNS_EVALUATE

from .. import conf
from ..models import Run, RunStatus
from ..selectors import run_checkpoint_row, run_data_recipe, run_export_dir
from .weights import run_trained_model

FINAL = "final"


def evaluation_path(*, run: Run, checkpoint: str | None = None) -> Path:
    """Where the evaluation of the run's final model (or of one checkpoint) is kept."""
    name = FINAL if not checkpoint else f"checkpoint-{re.sub(r'[^A-Za-z0-9._-]+', '-', checkpoint)}"
    return conf.run_dir(run.pk) / "evaluation" / f"{name}.json"


def evaluation_record(
    *, run: Run, model: Any, splits: Any, checkpoint: str | None = None
) -> dict[str, Any]:
    """Evaluate `model` on the test split of `splits` and store it (atomically); returns the JSON."""
    from engine.atomic import write_bytes_atomic
    from engine.evaluate import evaluate_model

    report = evaluate_model(model, splits.test, splits.info)
    report["run"] = run.pk
    report["checkpoint"] = checkpoint
    report["created_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    path = evaluation_path(run=run, checkpoint=checkpoint)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, json.dumps(report, allow_nan=False).encode("utf-8"))
    return report


def _checkpoint_model(run: Run, name: str) -> Any:
    from .weights import run_checkpoint_model

    return run_checkpoint_model(run=run, name=name)


def evaluation_check(*, run: Run, checkpoint: str | None = None) -> None:
    """Refuse, before any work, an evaluation that cannot be made: a run of imported weights has
    no dataset (409 no_dataset), an unknown checkpoint (404), a run with no trained model (409)."""
    run_data_recipe(run)
    if checkpoint:
        # Any run that has trained a while may have kept checkpoints (also failed or cancelled ones).
        run_checkpoint_row(run=run, name=checkpoint)
    elif run.status != RunStatus.SUCCEEDED or not (run_export_dir(run) / "model.safetensors").is_file():
        raise Conflict("run_not_trained", f"Run {run.pk} has no trained model ({run.status}).")


def run_evaluation_create(*, run: Run, checkpoint: str | None = None) -> dict[str, Any]:
    """Evaluate the final model or a kept checkpoint of a run on its test split now, and store it."""
    from engine.data import load_dataset

    evaluation_check(run=run, checkpoint=checkpoint)
    model = _checkpoint_model(run, checkpoint) if checkpoint else run_trained_model(run=run)
    splits = load_dataset(run_data_recipe(run))
    if len(splits.test) == 0:
        raise DomainError("no_test_split", "This run's recipe has no test split to evaluate on.")
    return evaluation_record(run=run, model=model, splits=splits, checkpoint=checkpoint or None)


def run_evaluation_request(*, run: Run, checkpoint: str | None = None, user: Any = None) -> Job:
    """Queue the evaluation as a "runs.evaluate" job (after the same checks as the request's path);
    the job's result is the evaluation, also stored as the run's file."""
    from webapp.jobs.services import job_create

    evaluation_check(run=run, checkpoint=checkpoint)
    return job_create(
        kind=RUNS_EVALUATE, team=run.team, owner=user, subject_id=run.pk,
        params={"checkpoint": checkpoint or None},
    )


def run_evaluation(*, run: Run, checkpoint: str | None = None) -> dict[str, Any]:
    """The stored evaluation (final, or of `checkpoint`); the final one is computed once if missing."""
    path = evaluation_path(run=run, checkpoint=checkpoint)
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    if checkpoint:
        raise NotFound(
            "evaluation_missing",
            f'Checkpoint {checkpoint!r} has not been evaluated; POST {{"checkpoint": ...}} first.',
        )
    if run.status != RunStatus.SUCCEEDED:
        raise Conflict(
            "run_not_trained",
            f"Run {run.pk} has not succeeded ({run.status}); nothing to evaluate.",
        )
    return run_evaluation_create(run=run)


def run_evaluations_stored(*, run: Run) -> list[str]:
    """Names of the stored evaluations ("final", "checkpoint-<name>")."""
    folder = conf.run_dir(run.pk) / "evaluation"
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
