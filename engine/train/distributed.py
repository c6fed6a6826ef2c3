"""Multi-process runs: launch N ranks with PyTorch's elastic launcher; the entry point of one rank.

A job is a folder with `job.json` (everything a rank needs, JSON only):

    {"spec": {...}, "data": {DataRecipe}, "config": {TrainConfig, processes N},
     "out_dir": "runs/42" | null, "resume_from": path | null, "init_from": path | null,
     "step_delay_s": 0.0}

Each rank runs `python -m engine.train.distributed JOB_DIR/job.json`: on one node the worker starts
N of them through `torch.distributed.launcher.api.elastic_launch` (`launch()` below: standalone
c10d rendezvous on a free loopback port); on several nodes `torchrun` does (docs/deploy.md,
"multi-node run"). The same code trains either way. A rank joins the process group (gloo on
the CPU, nccl on GPUs), loads the data from the recipe and calls `train()`, which shares each
global batch out (engine.train.ranks).

What comes back, in the job folder (nothing pickled):

    events.jsonl      rank 0's events, one JSON object a line: metric points (the sink), train
                      start, every step's progress, checkpoints, validations, the result; the
                      parent tails it (`launch(on_event=...)`)
    rank-N.json       each rank's outcome: {rank, world, status, steps, epochs} or {rank, error, field}
    rank-N.safetensors  each rank's final weights (all ranks hold the same)
    stop              created by the parent to cancel: every rank stops at the same step (they
                      agree on the stop with an all-reduce before each step)
    logs/             the ranks' stdout and stderr (the launcher's log folder)

A rank also ends when the process that started it dies (PR_SET_PDEATHSIG where Linux has it, and
a thread that watches the parent pid), so a SIGKILLed worker leaves no rank training.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from engine.train.callbacks import StopCheck
from engine.train.checkpoint import state_dict_for_save
from engine.train.config import ConfigError, parse_config
from engine.train.errors import TrainingError
from engine.train.state import TrainResult, TrainState
from engine.train.trainer import train

__all__ = ["EventTail", "EventWriter", "JOB_FILE", "job_outcome", "job_write", "launch", "main", "rank_main"]

JOB_FILE = "job.json"
EVENTS_FILE = "events.jsonl"
STOP_FILE = "stop"
EventHandler = Callable[[dict[str, Any]], None]
_log = logging.getLogger(__name__)


def job_write(job_dir: Path | str, job: Mapping[str, Any]) -> Path:
    """Write `job.json` into `job_dir` (made empty of an earlier attempt's outcome); its path."""
    folder = Path(job_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for name in (EVENTS_FILE, STOP_FILE):
        (folder / name).unlink(missing_ok=True)
    for old in folder.glob("rank-*"):
        old.unlink(missing_ok=True)
    path = folder / JOB_FILE
    tmp = folder / f".{JOB_FILE}.tmp"
    tmp.write_text(json.dumps(dict(job)), encoding="utf-8")
    tmp.replace(path)
    return path


# --- the ranks' side ------------------------------------------------------------------------


class EventWriter:
    """Rank 0's sink and callbacks: every event one JSON line in `events.jsonl`, flushed at once."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def write(self, event: dict[str, Any]) -> None:
        """Append one event."""
        self._file.write(json.dumps(event) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file."""
        self._file.close()

    def log(self, step: int, epoch: float, values: dict[str, float]) -> None:
        """MetricSink."""
        self.write(
            {"type": "metric", "step": int(step), "epoch": float(epoch), "values": dict(values)}
        )

    def _at(self, kind: str, state: TrainState, **more: Any) -> None:
        self.write(
            {
                "type": kind,
                "step": state.step,
                "epoch": state.epoch,
                "epochs": state.epochs,
                "epoch_progress": state.epoch_progress,
                "total_steps": state.total_steps,
                **more,
            }
        )

    def on_train_start(self, state: TrainState) -> None:
        """Where training (re)starts and its planned total."""
        self._at("train_start", state)

    def on_train_batch_end(self, state: TrainState, loss: float | None) -> None:
        """Every step's progress (what the worker's lease and cancel bookkeeping follow)."""
        self._at("batch_end", state)

    def on_validation_end(self, state: TrainState, metrics: Mapping[str, float]) -> None:
        """The epoch's validation (a sweep's pruner reads it)."""
        self._at("validation", state, metrics=dict(metrics))

    def on_checkpoint(self, state: TrainState, path: Path) -> None:
        """A finished checkpoint directory."""
        self._at("checkpoint", state, path=str(path))


class StepDelay:
    """Sleeps after every step (demos and tests that act on a run mid-way)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def on_train_batch_end(self, state: TrainState, loss: float | None) -> None:
        """Sleep."""
        time.sleep(self.seconds)


def _die_with_parent() -> None:
    """End this rank when the process that started it dies (worker SIGKILLed, torchrun gone)."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(70)

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(70)  # a rank blocked in a collective must not wait for its peers
            time.sleep(0.2)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _backend(device: str) -> str:
    """gloo on the CPU; on GPUs nccl for the gradients and gloo for the small CPU tensors the
    ranks agree on (the stop flag, the train window)."""
    return "cpu:gloo,cuda:nccl" if device != "cpu" and torch.cuda.is_available() else "gloo"


def rank_main(job_path: Path | str) -> int:
    """Train one rank of the job at `job_path`; 0 when it trained (or was cancelled), 1 on error."""
    import torch.distributed as dist

    from engine.data import load_dataset

    _die_with_parent()
    job_file = Path(job_path)
    folder = job_file.parent
    job = json.loads(job_file.read_text(encoding="utf-8"))
    rank = int(os.environ.get("RANK", "0"))
    outcome: dict[str, Any] = {"rank": rank}
    writer: EventWriter | None = None
    try:
        cfg = parse_config(job["config"])
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if _backend(cfg.device) != "gloo" and local_rank < torch.cuda.device_count():
            torch.cuda.set_device(local_rank)  # one more rank than GPUs: train() says so clearly
        dist.init_process_group(backend=_backend(cfg.device))
        outcome["world"] = dist.get_world_size()
        stop_file = folder / STOP_FILE
        callbacks: list[Any] = []
        if rank == 0:
            writer = EventWriter(folder / EVENTS_FILE)
            callbacks.append(writer)
        if float(job.get("step_delay_s") or 0):
            callbacks.append(StepDelay(float(job["step_delay_s"])))
        splits = load_dataset(job["data"])
        result = train(
            job.get("spec"),
            splits,
            cfg,
            out_dir=job.get("out_dir"),
            callbacks=callbacks,
            sink=writer,
            should_stop=stop_file.exists,
            resume_from=job.get("resume_from"),
            init_from=job.get("init_from"),
        )
        from safetensors.torch import save_file

        assert result.model is not None
        save_file(state_dict_for_save(result.model), folder / f"rank-{rank}.safetensors")
        outcome.update(status=result.status, steps=result.steps, epochs=result.epochs)
        if writer is not None:
            writer.write({"type": "result", **result.to_json()})
        code = 0
    except (TrainingError, ConfigError, ValueError) as exc:
        outcome.update(error=str(exc), field=getattr(exc, "field", None))
        code = 1
    except Exception as exc:
        outcome.update(error=f"rank {rank} failed ({type(exc).__name__}: {exc})", field=None)
        code = 1
    finally:
        if writer is not None:
            writer.close()
    (folder / f"rank-{rank}.json").write_text(json.dumps(outcome), encoding="utf-8")
    if dist.is_initialized():
        with contextlib.suppress(Exception):
            if code == 0:
                # No rank tears its connections down while a peer may still be sending on them.
                dist.barrier()
            dist.destroy_process_group()
    return code


def main(argv: list[str] | None = None) -> int:
    """`python -m engine.train.distributed JOB_DIR/job.json` (one rank; the launcher sets RANK etc.)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m engine.train.distributed JOB_DIR/job.json", file=sys.stderr)
        return 2
    return rank_main(args[0])


# --- the parent's side --------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EventTail:
    """Reads `events.jsonl` as rank 0 appends to it, hands each event over, writes the stop file.

    The parent of the ranks polls it: `launch()` here, the worker watching a Kubernetes Job
    (workers/kubernetes.py) over the shared media volume."""

    def __init__(
        self, folder: Path, on_event: EventHandler | None, should_stop: StopCheck | None
    ) -> None:
        self._path, self._stop_path = folder / EVENTS_FILE, folder / STOP_FILE
        self._on_event, self._should_stop = on_event, should_stop
        self._offset, self._partial = 0, b""
        self.result: dict[str, Any] | None = None
        self.stopped = False
        self.handler_error: BaseException | None = None

    def poll(self) -> None:
        """Hand over what is new; create the stop file once the stop check says so."""
        if not self.stopped and self._should_stop is not None and self._should_stop():
            self._stop_path.touch()
            self.stopped = True
        try:
            with open(self._path, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except FileNotFoundError:
            return
        self._offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()  # a line rank 0 has not finished writing
        for line in lines:
            if not line.strip():
                continue
            event = json.loads(line)
            if event.get("type") == "result":
                self.result = event
            if self._on_event is not None:
                try:
                    self._on_event(event)
                except Exception as exc:  # the handler's failure must not leave the ranks running
                    self.handler_error = exc
                    self._stop_path.touch()
                    self.stopped = True


def launch(
    job: Mapping[str, Any],
    job_dir: Path | str,
    *,
    on_event: EventHandler | None = None,
    should_stop: StopCheck | None = None,
    poll_seconds: float = 0.01,
) -> TrainResult:
    """Train `job` with `config.processes` ranks on this machine; rank 0's result and weights.

    Starts the ranks with `elastic_launch` (c10d rendezvous on a free loopback port, no restarts),
    hands rank 0's events to `on_event` as they come (on the calling thread), creates the stop
    file once `should_stop()` is true. Raises TrainingError with the first failing rank's message.
    """
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    cfg = parse_config(job["config"])
    if cfg.nodes > 1:
        raise TrainingError(
            f"a run of {cfg.nodes} nodes starts its ranks on several machines (an indexed Job on "
            "Kubernetes, NETLOOM_RUNNER=kubernetes), not on this one", field="nodes")
    folder = Path(job_dir)
    job_path = job_write(folder, {**job, "config": cfg.model_dump(mode="json")})
    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=cfg.processes,
        run_id=f"netloom-{uuid.uuid4().hex[:12]}",
        rdzv_backend="c10d",
        rdzv_endpoint=f"127.0.0.1:{_free_port()}",
        max_restarts=0,
        monitor_interval=0.1,
        start_method="spawn",
        logs_specs=DefaultLogsSpecs(log_dir=str(folder / "logs"), redirects=Std.ALL),
    )
    failure: list[BaseException] = []

    def run_ranks() -> None:
        try:
            elastic_launch(config, sys.executable)(
                "-u", "-m", "engine.train.distributed", str(job_path)
            )
        except BaseException as exc:  # ChildFailedError, a rendezvous failure
            failure.append(exc)

    # The launcher on its own thread, so this one hands events over; the launcher installs no
    # signal handlers off the main thread, and the worker keeps its own.
    launcher = threading.Thread(target=run_ranks, name="netloom-ranks", daemon=True)
    tail = EventTail(folder, on_event, should_stop)
    launcher.start()
    while launcher.is_alive():
        tail.poll()
        launcher.join(poll_seconds)
    tail.poll()
    if tail.handler_error is not None:
        raise tail.handler_error
    return job_outcome(job, folder, tail, failure=str(failure[0]) if failure else None)


def job_outcome(job: Mapping[str, Any], folder: Path | str, tail: EventTail, *,
                failure: str | None = None) -> TrainResult:
    """Rank 0's result once every rank of `job` ended, from the files in the job folder.

    Raises TrainingError with the first failing rank's message, or with `failure` (what the
    launcher or the cluster said) when a rank left no outcome.
    """
    cfg = parse_config(job["config"])
    folder = Path(folder)
    outcomes = _rank_outcomes(folder, cfg.world)
    errors = [o for o in outcomes if o.get("error")]
    if errors:
        first = errors[0]
        raise TrainingError(str(first["error"]), field=first.get("field"))
    finished = len(outcomes) == cfg.world and all(o.get("status") for o in outcomes)
    if tail.result is not None and finished:
        if failure:
            # Every rank saved its weights and wrote its outcome before the launcher saw it end
            # badly: the run is whole, what failed was a process's exit. Said, not fatal.
            _log.warning("a training process ended badly after its work was saved: %s", failure)
        return _result(job, tail.result, folder)
    detail = failure or "rank 0 gave no result"
    raise TrainingError(
        f"the {cfg.world} training processes failed: {detail}{_stderr_tails(folder)}; "
        f"see {folder / 'logs'}"
    )


def _stderr_tails(folder: Path, lines: int = 8) -> str:
    """The last lines each rank wrote to stderr (what an abort or a native crash printed)."""
    parts = []
    for path in sorted((folder / "logs").glob("*/attempt_*/*/stderr.log")):
        with contextlib.suppress(OSError):
            text = path.read_text(encoding="utf-8", errors="replace").strip()
            if text:
                tail = "\n".join(text.splitlines()[-lines:])
                parts.append(f"\nrank {path.parent.name} stderr:\n{tail}")
    return "".join(parts)


def _rank_outcomes(folder: Path, processes: int) -> list[dict[str, Any]]:
    outcomes = []
    for rank in range(processes):
        path = folder / f"rank-{rank}.json"
        if path.is_file():
            outcomes.append(json.loads(path.read_text(encoding="utf-8")))
    return outcomes


def _result(job: Mapping[str, Any], summary: dict[str, Any], folder: Path) -> TrainResult:
    """The TrainResult of rank 0, its model rebuilt from the spec and rank 0's final weights."""
    from safetensors.torch import load_file

    model = None
    if job.get("spec") is not None:
        from engine.build import build
        from engine.spec import parse_spec

        cfg = parse_config(job["config"])
        model = build(parse_spec(job["spec"]), seed=cfg.seed)
        model.load_state_dict(load_file(folder / "rank-0.safetensors", device="cpu"))

    def path(key: str) -> Path | None:
        value = summary.get(key)
        return Path(value) if value else None

    return TrainResult(
        status=summary["status"],
        metrics=summary["metrics"],
        steps=int(summary["steps"]),
        epochs=int(summary["epochs"]),
        task=summary["task"],
        best_checkpoint=path("best_checkpoint"),
        last_checkpoint=path("last_checkpoint"),
        out_dir=path("out_dir"),
        model=model,
    )


if __name__ == "__main__":
    exit_code = main()
    # The outcome is on disk: skip the interpreter's teardown, where gloo's threads and sockets
    # go in no particular order (a rank once aborted there after its work was done).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exit_code)
