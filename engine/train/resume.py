"""A run's checkpoints: what goes in them, where they go, pruning, and resuming from one.

The directory format (safetensors + state.json, written atomically) is `engine.train.checkpoint`;
this module decides what a run stores there and puts it back on resume, so that a resumed run
takes exactly the steps the uninterrupted one would have.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import torch

from engine.train.callbacks import Hooks
from engine.train.checkpoint import (
    Checkpoint,
    checkpoint_files,
    latest_checkpoint,
    load_checkpoint,
    restore_rng,
    write_checkpoint,
)
from engine.train.config import TrainConfig
from engine.train.errors import TrainingError
from engine.train.monitor import Monitor
from engine.train.schedule import Schedule
from engine.train.state import LastMetrics, TrainState

__all__ = ["Checkpointer", "find_checkpoint", "saved_with_one_group"]


def find_checkpoint(resume_from: Path | str) -> Checkpoint:
    """The newest checkpoint in a run directory, its `checkpoints/`, or a checkpoint itself."""
    path = latest_checkpoint(Path(resume_from) / "checkpoints") or latest_checkpoint(Path(resume_from))
    if path is None:
        raise TrainingError(f"no checkpoint found in {resume_from}")
    return load_checkpoint(path)


def saved_with_one_group(ck: Checkpoint | None) -> bool:
    """Whether the checkpoint's optimizer has a single parameter group (runs before decay groups)."""
    return ck is not None and ck.optimizer is not None and len(ck.optimizer["param_groups"]) == 1


class Checkpointer:
    """Writes a run's checkpoints under `out_dir/checkpoints/` (nothing when out_dir is None)."""

    def __init__(
        self,
        out_dir: Path | None,
        *,
        collective: bool = False,
        cfg: TrainConfig,
        spec_json: Any,
        task: str,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        schedule: Schedule,
        scaler: torch.amp.GradScaler,
        state: TrainState,
        monitor: Monitor,
        best: Monitor,
        last: LastMetrics,
        hooks: Hooks,
    ) -> None:
        self.directory = out_dir / "checkpoints" if out_dir is not None else None
        # A sharded (FSDP) run: reading the full state is a collective every rank joins, so ranks
        # that write nothing still build each checkpoint's files (and drop them).
        self._collective = collective
        self._cfg, self._spec_json, self._task = cfg, spec_json, task
        self._model, self._optimizer, self._schedule, self._scaler = model, optimizer, schedule, scaler
        self._state, self._monitor, self._best, self._last, self._hooks = state, monitor, best, last, hooks
        self._pending_best: tuple[dict[str, bytes], TrainState] | None = None

    @property
    def enabled(self) -> bool:
        """Whether checkpoints are written at all."""
        return self.directory is not None

    def _files(self, generator_state: torch.Tensor) -> dict[str, bytes]:
        state = self._state
        return checkpoint_files(
            model=self._model,
            optimizer=self._optimizer,
            scheduler=self._schedule,  # its state_dict: the scheduler(s) it steps
            scaler=self._scaler,
            generator_state=generator_state,
            state={
                "epoch": state.epoch,
                "step": state.step,
                "batch_in_epoch": state.batch_in_epoch,
                "total_steps": state.total_steps,
                "config": self._cfg.model_dump(mode="json"),
                "spec": self._spec_json,
                "task": self._task,
                "trainer": {
                    "monitor": self._monitor.to_json(),
                    "best": self._best.to_json(),
                    "last_val": self._last.val,
                    "last_train": self._last.train,
                },
            },
        )

    def save(self, name: str, generator_state: torch.Tensor) -> Path | None:
        """Write checkpoint `name` now; `generator_state` is the shuffle generator to store."""
        if self.directory is None:
            if self._collective:
                self._files(generator_state)
            return None
        path = write_checkpoint(self.directory / name, self._files(generator_state))
        self._hooks("on_checkpoint", self._state, path)
        return path

    def save_best(self, generator_state: torch.Tensor, *, defer: bool = False) -> Path | None:
        """Write `best`: this epoch's weights beat every earlier epoch's on the best policy.

        `defer`: an epoch that writes no epoch checkpoint (checkpoint_every > 1) keeps its best in
        memory, and `flush_best` writes it with the next epoch checkpoint or at the run's end: a run
        that improves at most epochs writes `best` once per checkpoint, not once per epoch. A crash
        in between loses it as it loses those epochs: the resumed run trains them again.
        """
        if self.directory is None:
            if self._collective:
                self._files(generator_state)
            return None
        self._best.best_checkpoint = str(self.directory / "best")
        if defer:
            self._pending_best = (self._files(generator_state), copy.copy(self._state))
            return None
        self._pending_best = None
        return self.save("best", generator_state)

    def flush_best(self) -> Path | None:
        """Write the best checkpoint held in memory (`save_best(defer=True)`), if any."""
        pending, self._pending_best = self._pending_best, None
        if pending is None or self.directory is None:
            return None
        files, state = pending
        path = write_checkpoint(self.directory / "best", files)
        self._hooks("on_checkpoint", state, path)
        return path

    def save_epoch(self, generator_state: torch.Tensor) -> Path | None:
        """Write `epoch-NNNN` (after a best held in memory) and keep only the newest `keep_checkpoints`."""
        self.flush_best()
        path = self.save(f"epoch-{self._state.epoch:04d}", generator_state)
        if self.directory is not None:
            numbered = sorted(self.directory.glob("epoch-*"))
            for old in numbered[: -self._cfg.keep_checkpoints]:
                shutil.rmtree(old, ignore_errors=True)
        return path

    def restore(self, ck: Checkpoint, generator: torch.Generator) -> Path:
        """Put the run back where `ck` left it (weights, optimizer, schedule, counters, RNGs).

        Resumed with another length (more epochs, another max_steps), the run goes on from the
        checkpoint's step with its optimizer state; a schedule laid out over the total steps
        (cosine, one-cycle) is laid out again over the new total (`Schedule.continue_at`), a
        per-epoch one (step, plateau) simply goes on. The best checkpoint is chosen among this
        run's own epochs when `ck` comes from another run's folder (its `best` is not here).

        Returns the checkpoint's path: the run's last checkpoint until it writes another.
        """
        try:
            self._model.load_state_dict(ck.model)
        except RuntimeError as exc:
            raise TrainingError(
                f"checkpoint {ck.path} does not fit this graph: {str(exc).splitlines()[0]}"
            ) from None
        if ck.optimizer is not None:
            self._optimizer.load_state_dict(ck.optimizer)
        if self._schedule.depends_on_total and not self._schedule.same_horizon(ck.scheduler):
            self._schedule.continue_at(ck.step)
        else:
            self._schedule.load_state_dict(ck.scheduler)
        if ck.scaler is not None and self._scaler.is_enabled():
            self._scaler.load_state_dict(ck.scaler)
        state = self._state
        state.epoch, state.step = ck.epoch, ck.step
        state.batch_in_epoch = int(ck.state.get("batch_in_epoch", 0))
        trainer_state = ck.state.get("trainer", {})
        self._monitor.load_json(trainer_state)
        own = self.directory is not None and ck.path.resolve().parent == self.directory.resolve()
        if own:
            self._best.load_best_json(trainer_state, legacy=self._cfg.best is None)
        self._last.val = trainer_state.get("last_val", {})
        self._last.train = trainer_state.get("last_train", {})
        restore_rng(ck.rng["tensors"], ck.rng["extra"], generator)
        return ck.path
