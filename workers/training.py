"""Training one claimed run, in named steps: the data and the engine's loop, then the outcome.

workers/runs.py's `runs.train` task claims a run and its lease and hands it here with its
recorder. Each step records through the runs app's services; exceptions become messages a user
can act on. A run whose lease was lost meanwhile records nothing: the delivery that owns it does.

A full volume is the machine's failure, not the run's: the run is queued again (it resumes from its
last checkpoint; the write that failed left nothing, engine/atomic.py) and trained again once its
volume has the margin free (NETLOOM_DISK_MARGIN_BYTES; waited for at most RUNS_SPACE_WAIT_SECONDS),
until its attempts are spent; then it fails with that reason (`_out_of_space`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from webapp.disk import out_of_space, space_is_low, volume_of
from webapp.runs import conf
from webapp.runs.inference.evaluation import evaluation_record
from webapp.runs.inference.exports import run_export_write
from webapp.runs.models import Run, RunStatus
from webapp.runs.scheduling.leases import run_requeue, run_token_send
from webapp.runs.selectors import run_data_recipe, run_start_from
from webapp.runs.services import metrics_json, run_finish, run_log, run_recipe_record
from webapp.sweeps.services import TrialMonitor, TrialReportLost, trial_monitor
from workers.recorder import RunCallbacks, RunRecorder

logger = logging.getLogger(__name__)


# Trains a claimed run elsewhere and returns rank 0's result: (run=, recorder=, monitor=) -> result.
Runner = Callable[..., Any]


def user_message(exc: BaseException) -> str:
    """A message a user can act on: the engine's own message for its errors."""
    from engine.data import DataError
    from engine.train import ConfigError, TrainingError

    if isinstance(exc, TrainingError | DataError | ConfigError | ValueError | TrialReportLost):
        return str(exc)
    return f"internal error while training ({type(exc).__name__}: {exc}); the administrators have the details"


def train_claimed(run: Run, *, token: str, recorder: RunRecorder, runner: Runner | None = None) -> str:
    """Train a run this worker holds the lease of and record its outcome; the outcome's name.

    `runner` trains somewhere else and returns rank 0's result (the Kubernetes runner passes the
    watch of its Job); by default the run trains here, in this process or in local ranks.
    """
    try:
        splits, result, monitor = _train(run, token=token, recorder=recorder, runner=runner)
    except Exception as exc:
        recorder.close()
        full = out_of_space(exc)
        if full is not None and not recorder.lease_lost:
            return _out_of_space(run, token=token, error=full)
        logger.exception("run %s failed", run.pk)
        if not recorder.lease_lost:
            run_finish(run_id=run.pk, lease_token=token, status=RunStatus.FAILED, detail="training failed",
                       error=user_message(exc))
        return "failed"
    recorder.close()
    if recorder.lease_lost:
        return "lease lost"  # another delivery owns the run now; it records the outcome
    if result.status == "cancelled" and recorder.drain_requested and not recorder.cancel_requested:
        return _drained(run, token=token, steps=result.steps)
    stopped = _record_stop(run, token=token, recorder=recorder, monitor=monitor, result=result)
    if stopped:
        return stopped
    # A sweep's trial is one of many a user compares by its metrics: its test evaluation and its
    # ONNX + zip are made when someone asks for them (GET .../evaluation/, the export download),
    # not for every trial. Its export folder (safetensors, model.py, JSON) is written as for any run.
    trial = monitor is not None
    _export_and_evaluate(run, result=result, splits=splits, evaluate=not trial)
    detail = "stopped early" if result.status == "stopped_early" else "training finished"
    # run_finish also queues the export job (ONNX and the zip, on the short queue), once.
    run_finish(run_id=run.pk, lease_token=token, status=RunStatus.SUCCEEDED, detail=detail,
               final_metrics=metrics_json(result.metrics), extra={"step": result.steps}, export=not trial)
    return "succeeded"


def _drained(run: Run, *, token: str, steps: int) -> str:
    """The worker shuts down: the run stopped at a step and checkpointed it (engine/train/epochs.py);
    queue it again, attempt refunded, for another worker to resume from there."""
    worker = Run.objects.filter(pk=run.pk).values_list("worker", flat=True).first() or "its worker"
    if not run_requeue(run_id=run.pk, lease_token=token, refund_attempt=True, detail=(
            f"{worker} shut down at step {steps}; queued again to resume from there")):
        return "lease lost"
    run_token_send(run_id=run.pk)
    return "requeued: worker shut down"


def _out_of_space(run: Run, *, token: str, error: OSError) -> str:
    """The run's volume is full: queue it again and send it once space returns, or fail it with that reason."""
    volume = volume_of(error.filename if isinstance(error.filename, str) else conf.run_dir(run.pk))
    reason = f"No space left on the volume {volume} ({error.strerror or error})"
    attempts, max_attempts = Run.objects.filter(pk=run.pk).values_list("attempts", "max_attempts").get()
    logger.warning("run %s: %s (attempt %s of %s)", run.pk, reason, attempts, max_attempts)
    if attempts >= max_attempts:
        message = (f"{reason}; gave up after {attempts} attempts. Free space on {volume}, then start "
                   "the run again from its last checkpoint.")
        run_finish(run_id=run.pk, lease_token=token, status=RunStatus.FAILED, detail="training failed",
                   error=message)
        return "failed"
    if not run_requeue(run_id=run.pk, lease_token=token, detail=(
            f"{reason}; queued again to resume from its last checkpoint once space returns "
            f"(attempt {attempts + 1} of {max_attempts})")):
        return "lease lost"
    deadline = time.monotonic() + float(conf.get("RUNS_SPACE_WAIT_SECONDS"))
    while space_is_low(volume) and time.monotonic() < deadline:
        time.sleep(1.0)
    run_token_send(run_id=run.pk)
    return "requeued: volume full"


def _train(run: Run, *, token: str, recorder: RunRecorder,
           runner: Runner | None = None) -> tuple[Any, Any, TrialMonitor | None]:
    """The run's data, and the engine's loop over it: (splits, the trainer's result, the monitor)."""
    from engine.data import load_dataset
    from engine.train import train

    recipe = run_data_recipe(run)
    splits = load_dataset(recipe)
    if splits.info.recipe and splits.info.recipe != recipe:
        run_recipe_record(run_id=run.pk, lease_token=token, recipe=splits.info.recipe)
    # A sweep's trial reports each epoch's objective; its pruner may stop it (webapp.sweeps).
    monitor = trial_monitor(run.pk)
    if runner is not None:
        result = runner(run=run, recorder=recorder, monitor=monitor)
    elif int(run.config.get("processes") or 1) > 1:
        result = train_run_distributed(run=run, recipe=splits.info.recipe or recipe, recorder=recorder,
                                       monitor=monitor)
    else:
        result = train(
            run.graph_revision.spec, splits, run.config,
            out_dir=conf.run_dir(run.pk), callbacks=[RunCallbacks(recorder), *([monitor] if monitor else [])],
            sink=recorder, should_stop=stop_check(recorder, monitor), **run_start_from(run=run),
        )
    if monitor is not None:
        monitor.flush()  # the epochs' objectives held back (a sweep without a pruner), before the outcome
    return splits, result, monitor


def _record_stop(run: Run, *, token: str, recorder: RunRecorder, monitor: TrialMonitor | None,
                 result: Any) -> str | None:
    """Record a run that stopped before its end (pruned by its sweep, or cancelled); None otherwise."""
    if result.status != "cancelled":
        return None
    if monitor is not None and monitor.pruned_reason and not recorder.should_stop():
        run_finish(
            run_id=run.pk, lease_token=token, status=RunStatus.PRUNED, detail=monitor.pruned_reason,
            error=monitor.pruned_reason, final_metrics=metrics_json(result.metrics), extra={"step": result.steps},
        )
        return "pruned"
    run_finish(
        run_id=run.pk, lease_token=token, status=RunStatus.CANCELLED,
        detail=f"cancelled at step {result.steps}", final_metrics=metrics_json(result.metrics),
        extra={"step": result.steps, "cancel_observed_step": recorder.cancel_observed_step},
    )
    return "cancelled"


def _export_and_evaluate(run: Run, *, result: Any, splits: Any, evaluate: bool = True) -> None:
    """The export folder (safetensors, model.py, JSON) and the test split's evaluation, before the
    run is shown done; a failure of either is logged on the run, never fails it."""
    # The default export holds the best checkpoint's weights when there is one (config.best).
    held = best_weights_load(run=run, result=result)
    try:
        # safetensors, model.py and JSON now; ONNX and the zip come from the export job.
        run_export_write(run=run, model=result.model, data_info=splits.info, metrics=result.metrics, onnx=False,
                         checkpoint=held)
    except Exception as exc:
        logger.exception("run %s: export failed", run.pk)
        run_log(run_id=run.pk, level="warning", message=f"export failed: {exc}")
    try:
        # The evaluation on the test split (GET /api/runs/<id>/evaluation/).
        if evaluate and len(splits.test):
            evaluation_record(run=run, model=result.model, splits=splits)
    except Exception as exc:
        logger.exception("run %s: evaluation failed", run.pk)
        run_log(run_id=run.pk, level="warning", message=f"evaluation failed: {exc}")


def stop_check(recorder: RunRecorder, monitor: TrialMonitor | None) -> Any:
    """The trainer's stop check: the recorder's (cancel, lease lost), and a sweep trial's pruner."""
    if monitor is None:
        return recorder.should_stop
    return lambda: recorder.should_stop() or monitor.should_stop()


def train_run_distributed(
    *, run: Run, recipe: dict[str, Any], recorder: RunRecorder, monitor: TrialMonitor | None
) -> Any:
    """Train a run of `config.processes` ranks (engine.train.distributed) and return rank 0's result.

    The ranks run engine code only; this process stays their parent: it tails rank 0's events
    (JSON lines) into the recorder through the same RunCallbacks as a 1-process run, and turns
    the recorder's stop check (cancel, lease lost) or the sweep's pruner into the ranks' stop file.
    Files of the attempt: `runs/<id>/ranks/` (job.json, events.jsonl, rank-N.json, logs/).
    """
    from engine.train.distributed import launch

    return launch(rank_job(run=run, recipe=recipe), conf.run_dir(run.pk) / "ranks",
                  on_event=rank_events(recorder, monitor), should_stop=stop_check(recorder, monitor))


def rank_job(*, run: Run, recipe: dict[str, Any]) -> dict[str, Any]:
    """The job.json of a run's ranks (engine.train.distributed): spec, data, config, out_dir, start."""
    start = {key: str(path) if path is not None else None for key, path in run_start_from(run=run).items()}
    return {"spec": run.graph_revision.spec, "data": recipe, "config": run.config,
            "out_dir": str(conf.run_dir(run.pk)), "step_delay_s": float(conf.get("RUNS_STEP_DELAY_SECONDS")),
            **start}


def rank_events(recorder: RunRecorder, monitor: TrialMonitor | None) -> Any:
    """The handler of rank 0's events (events.jsonl): into the recorder through the same
    RunCallbacks as a 1-process run, validations to a sweep's monitor."""
    from types import SimpleNamespace

    callbacks = RunCallbacks(recorder, step_delay=0.0)  # the ranks sleep RUNS_STEP_DELAY_SECONDS

    def on_event(event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "metric":
            recorder.log(event["step"], event["epoch"], event["values"])
            return
        if kind not in ("train_start", "batch_end", "checkpoint", "validation"):
            return
        state = SimpleNamespace(step=event["step"], epoch=event["epoch"], epochs=event["epochs"],
                                epoch_progress=event["epoch_progress"], total_steps=event["total_steps"])
        if kind == "train_start":
            callbacks.on_train_start(state)
        elif kind == "batch_end":
            callbacks.on_train_batch_end(state, None)
        elif kind == "checkpoint":
            callbacks.on_checkpoint(state, Path(event["path"]))
        elif monitor is not None:
            monitor.on_validation_end(state, event["metrics"])

    return on_event


def best_weights_load(*, run: Run, result: Any) -> dict[str, Any] | None:
    """Load the best checkpoint's weights into `result.model`; {name, step, epoch} of it, or None."""
    import json

    from safetensors.torch import load_file

    best = result.best_checkpoint
    if best is None or not (best / "model.safetensors").is_file() or result.model is None:
        return None
    if Path(best).parent != conf.run_dir(run.pk) / "checkpoints":
        # A run resumed from another run's checkpoint (init/) that never beat it: the monitor still
        # names the source's folder; this run's export keeps its own final weights.
        return None
    state = json.loads((best / "state.json").read_text(encoding="utf-8"))
    weights = load_file(best / "model.safetensors", device="cpu")
    device = next(iter(result.model.parameters()), None)
    result.model.load_state_dict({k: v.to(device.device) if device is not None else v for k, v in weights.items()})
    result.model.eval()
    return {"name": best.name, "step": int(state["step"]), "epoch": float(state["epoch"])}
