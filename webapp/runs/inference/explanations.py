"""Explanations of a trained run: asked for (checked, stored queued, a "runs.explain" job created),
run (workers/inference.py), finished, read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from webapp.errors import Conflict, DomainError
from webapp.jobs.services import job_create
from webapp.queues import RUNS_EXPLAIN

from .. import conf
from ..models import Explanation, ExplanationStatus, Run, RunStatus
from ..selectors import run_checkpoint_row
from ..stream.events import event_emit
from .predict import _require_trained, run_pipeline


def explanation_create(
    *,
    run: Run,
    user: AbstractBaseUser,
    index: int | None = None,
    input: Any = None,  # noqa: A002 - the API's field name
    image: str | None = None,
    method: str,
    target: int | None = None,
    layer: str | None = None,
    checkpoint: str | None = None,
) -> Explanation:
    """Check the request, store the explanation queued and create its "runs.explain" job (sent
    to the short queue after the commit; a broker that is down leaves the send owed to the reaper).

    The sample is a test-split `index`, `input` numbers of the feature shape, `input` a row as in
    the user's CSV ({column: raw value}), or `image` an uploaded image as a `data:` URL / base64.
    A row or an image goes through the run's preprocessing pipeline (webapp/runs/inference/predict.py) and
    is stored as given (sample {"input": row | data URL}) so the page can show it back.
    """
    from engine.explain import METHODS

    if run.dataset_id is None:  # imported weights (webapp/runs/inference/imports.py): no data, no pipeline
        raise Conflict("no_dataset", f"Run {run.pk} holds imported weights and has no dataset; start a run "
                       "from its checkpoint 'imported' and explain that one.")
    if checkpoint is not None:
        # A kept checkpoint's weights (any run that wrote one: a cancelled run's `step-…` too).
        if not isinstance(checkpoint, str) or not checkpoint:
            raise DomainError("invalid", "checkpoint must be a checkpoint's name.", field="checkpoint")
        try:
            run_checkpoint_row(run=run, name=checkpoint)
        except DomainError as exc:
            raise DomainError(exc.code, exc.message, field="checkpoint") from None
    elif run.status != RunStatus.SUCCEEDED:
        raise Conflict("run_not_trained", f"Run {run.pk} has not succeeded ({run.status}); nothing to explain yet.")
    names = [m["name"] if isinstance(m, dict) else str(m) for m in METHODS]
    if method not in names:
        raise DomainError("invalid_method", f"Unknown method {method!r}; one of {', '.join(names)}.", field="method")
    if image is not None:
        if index is not None or input is not None:
            raise DomainError("invalid", "Give exactly one of index, input or image.",
                              fields={name: ["Give exactly one of index, input or image."]
                                      for name, v in (("index", index), ("input", input), ("image", image))
                                      if v is not None})
        explanation_input_prepare(run=run, image=image)  # a 400 naming `image` if it cannot be read
        input = image  # noqa: A001 - stored as the sample's input, shown back by the page
    elif (index is None) == (input is None):
        raise DomainError("invalid", "Give exactly one of index (a test-split row) or input (an array).",
                          fields={"index": ["Give index or input."], "input": ["Give index or input."]})
    if index is not None and (not isinstance(index, int) or isinstance(index, bool) or index < 0):
        raise DomainError("invalid", "index must be a non-negative integer.", field="index")
    if isinstance(input, dict):
        explanation_input_prepare(run=run, row=input)  # a 400 naming `input.<column>`
    elif input is not None and image is None and not isinstance(input, list):
        raise DomainError("invalid", "input must be an array of numbers.", field="input")
    if target is not None and (not isinstance(target, int) or isinstance(target, bool) or target < 0):
        raise DomainError("invalid", "target must be a non-negative integer (a class index).", field="target")
    sample: dict[str, Any] = {"index": index} if index is not None else {"input": input}
    if checkpoint is not None:
        sample["checkpoint"] = checkpoint  # the weights explained (workers/inference.py)
    with transaction.atomic():
        explanation = Explanation.objects.create(
            run=run, method=method, sample=sample, target=target, layer=layer or "", created_by=user,
        )
        event_emit(run_id=run.pk, event={
            "type": "explanation", "id": explanation.pk, "status": ExplanationStatus.QUEUED, "method": method,
        })
        job_create(kind=RUNS_EXPLAIN, team=run.team, owner=user, subject_id=explanation.pk)
    return explanation


def _image_data(image: str) -> bytes:
    """The bytes of a `data:image/...;base64,` URL or of plain base64."""
    import base64
    import binascii

    text = image.split(",", 1)[1] if image.startswith("data:") else image
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise DomainError("invalid_input", "image must be a data: URL or base64 of an image file.",
                          field="image") from None


def explanation_input_prepare(*, run: Run, row: dict[str, Any] | None = None, image: str | None = None) -> Any:
    """The network's input (a float tensor (1, *feature_shape)) for a typed row or an uploaded image.

    The run's own preprocessing pipeline (predict.run_pipeline, applied by the export's code) does
    it, as for predictions; bad input is a DomainError("invalid_input") naming `input.<column>`,
    `input` or `image`.
    """
    import torch

    from engine.export.predict_template import InputError, prepare

    _require_trained(run)
    raw: Any = _image_data(image) if image is not None else row
    try:
        x = prepare(run_pipeline(run=run), raw)
    except InputError as exc:
        field = exc.field
        if image is not None:
            field = "image"
        elif field not in ("input", "image"):
            field = f"input.{field}"
        else:
            field = "input"
        raise DomainError("invalid_input", exc.message, field=field) from None
    if len(x) != 1:
        raise DomainError("invalid_input", f"Give one sample; this input holds {len(x)}.", field="input")
    return torch.from_numpy(x)


def explanation_finish(
    *, explanation_id: int, result: dict[str, Any] | None, png: bytes | None = None, error: str = ""
) -> None:
    """Record an explanation's outcome (its PNG written atomically) and announce it on the stream."""
    from engine.atomic import write_bytes_atomic

    status = ExplanationStatus.FAILED if error else ExplanationStatus.SUCCEEDED
    png_path = ""
    if png is not None and not error:
        run_id = Explanation.objects.filter(pk=explanation_id).values_list("run_id", flat=True).get()
        path = conf.run_dir(run_id) / "explanations" / f"{explanation_id}.png"
        write_bytes_atomic(path, png)
        png_path = str(path)
    with transaction.atomic():
        explanation = Explanation.objects.select_for_update().get(pk=explanation_id)
        explanation.status = status
        explanation.result = result
        explanation.png_path = png_path
        explanation.error = error
        explanation.finished_at = timezone.now()
        explanation.save(update_fields=["status", "result", "png_path", "error", "finished_at"])
        event = {"type": "explanation", "id": explanation_id, "status": status, "method": explanation.method}
        if error:
            event["error"] = error
        event_emit(run_id=explanation.run_id, event=event)


def explanation_fail(*, explanation_id: int, error: str) -> bool:
    """Record an unfinished explanation failed with `error` (its job failed: the computation
    raised, its worker was lost too often, or it waited too long); False when it had finished."""
    unfinished = Explanation.objects.filter(
        pk=explanation_id, status__in=[ExplanationStatus.QUEUED, ExplanationStatus.RUNNING]
    )
    if not unfinished.exists():
        return False
    explanation_finish(explanation_id=explanation_id, result=None, error=error or "the explanation failed")
    return True


def explanation_mark_running(*, explanation_id: int) -> bool:
    """Move a queued explanation to running; False when it is already done (redelivery)."""
    return bool(
        Explanation.objects.filter(
            pk=explanation_id, status__in=[ExplanationStatus.QUEUED, ExplanationStatus.RUNNING]
        ).update(status=ExplanationStatus.RUNNING)
    )


def run_explanations(*, run: Run) -> QuerySet[Explanation]:
    """The run's explanations, newest first."""
    return run.explanations.all()


def explanation_image(*, explanation: Explanation) -> Path:
    """The PNG of a computed explanation; Conflict "explanation_not_ready" until there is one."""
    path = Path(explanation.png_path) if explanation.png_path else None
    if explanation.status != ExplanationStatus.SUCCEEDED or path is None or not path.is_file():
        raise Conflict("explanation_not_ready",
                       f"Explanation {explanation.pk} is {explanation.status}; no image yet.")
    return path
