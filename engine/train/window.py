"""The metric window: train loss, accuracy and samples/s over the last `log_every` steps.

Per-step values stay on the device (a detached loss, the logits and targets as views, no
kernel launched) and are read once per window; that read is also where a NaN or infinite
loss is found, and named by its step.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import torch

from engine.train.errors import TrainingError

__all__ = ["MetricWindow"]

# Logit elements a window may hold before its hits are counted early (bounds its memory).
_FOLD_AT = 1 << 22

# (each step's loss, hits or None, rows) of this rank -> the same over all ranks
WindowReduce = Callable[[list[float], int | None, int], tuple[list[float], int | None, int]]


class MetricWindow:
    """Collects each step's loss (and, for multiclass, logits and targets) until `flush`."""

    def __init__(
        self, *, device: torch.device, count_correct: bool, first_step: int, reduce: WindowReduce | None = None
    ) -> None:
        # On the CPU a read is no sync, and reading each value skips a stack kernel.
        self._on_device = device.type != "cpu"
        # A multi-process run's ranks sum their windows before reading them (engine.train.ranks).
        self._reduce = reduce
        self.count_correct = count_correct
        self._losses: list[torch.Tensor] = []
        self._logits: list[torch.Tensor] = []
        self._targets: list[torch.Tensor] = []
        self._buffered = 0
        # Hits of long windows, counted early; only used when `_folded`.
        self._correct = torch.zeros((), dtype=torch.int64, device=device)
        self._folded = False
        self._samples = 0
        self._first_step = first_step
        self._start = time.perf_counter()

    def restart_clock(self) -> None:
        """Start timing anew (samples/s counts training time only, not evaluation)."""
        self._start = time.perf_counter()

    def add(self, loss: torch.Tensor, out: torch.Tensor, target: torch.Tensor, samples: int) -> None:
        """Keep one step's loss, logits and target (no device work)."""
        self.add_loss(loss)
        self.add_outputs(out, target, samples)

    def add_outputs(self, out: torch.Tensor, target: torch.Tensor, samples: int) -> None:
        """Keep one micro-batch's logits and target (gradient accumulation; its loss comes by step)."""
        if self.count_correct:
            self._logits.append(out.detach())
            self._targets.append(target)
            self._buffered += out.numel()
            if self._buffered > _FOLD_AT:
                self._fold()
        self._samples += samples

    def add_loss(self, loss: torch.Tensor) -> None:
        """Keep one optimizer step's loss (the mean of its micro-batches' losses)."""
        self._losses.append(loss.detach())

    def _hits(self) -> torch.Tensor:
        logits = self._logits[0] if len(self._logits) == 1 else torch.cat(self._logits)
        targets = self._targets[0] if len(self._targets) == 1 else torch.cat(self._targets)
        self._logits.clear()
        self._targets.clear()
        return logits.argmax(dim=1).eq_(targets).sum()  # in place: one allocation fewer

    def _fold(self) -> None:
        if self._logits:
            self._correct.add_(self._hits())
            self._buffered = 0
            self._folded = True

    def _read_hits(self) -> int:
        """The window's correct predictions, read once; the counters start again."""
        hits = self._hits() if self._logits else self._correct
        if self._folded and hits is not self._correct:
            hits = hits + self._correct
        count = int(hits.item())
        if self._folded:
            self._correct.zero_()
            self._folded = False
        self._buffered = 0
        return count

    def flush(self, step: int, lr: float) -> dict[str, float] | None:
        """The window's values (`train/loss`, `lr`, `samples_per_s`, `train/accuracy`), then empty it.

        None when no step was added since the last flush. Raises TrainingError naming the step
        of the first loss that is not finite.
        """
        if not self._losses:
            return None
        if self._on_device:
            losses = torch.stack(self._losses).float().tolist()  # one device sync per window
        else:
            losses = [t.item() for t in self._losses]
        samples, hit_count = self._samples, None
        if self._reduce is not None:
            hit_count = self._read_hits() if self.count_correct else None
            losses, hit_count, samples = self._reduce(losses, hit_count, samples)
        for offset, value in enumerate(losses):
            if not math.isfinite(value):
                kind = "NaN" if math.isnan(value) else "infinite"
                bad_step = self._first_step + offset + 1
                raise TrainingError(f"loss is {kind} at step {bad_step}; stopping", step=bad_step)
        elapsed = max(time.perf_counter() - self._start, 1e-9)
        values: dict[str, Any] = {
            "train/loss": sum(losses) / len(losses),
            "lr": lr,
            "samples_per_s": samples / elapsed,
        }
        if self.count_correct:
            if hit_count is None:
                hit_count = self._read_hits()
            values["train/accuracy"] = float(hit_count) / samples
        self._losses.clear()
        self._samples = 0
        self._first_step = step
        self._start = time.perf_counter()
        return values
