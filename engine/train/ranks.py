"""One rank of a multi-process run: its share of each global batch, the gradient, the agreed stop.

`train()` runs the same loop on every rank of a `torch.distributed` process group (started by
`engine.train.distributed`). Every rank draws the global batches the 1-process run would draw
(the same seeded generator) and keeps rows `rank::world` of each; its mean loss is scaled by
`rows_here * world / rows_in_batch`, so DistributedDataParallel's gradient average is the
gradient of the global batch's mean loss even when the epoch's last batch splits unevenly (or
leaves a rank no row). The train window is summed over the ranks before it is read, and the
stop check is agreed on (one MAX all-reduce before every step) so every rank stops at the same
step. Validation and test passes are shared out too (rows `rank::world` of the split): the loss
sums are all-reduced and the predictions gathered, so every rank computes the metrics of the
whole split (each needs them for the schedule, early stopping and the best checkpoint); rank 0
alone reports them.

With `strategy: fsdp` the ranks share the model itself as well (FSDP2's `fully_shard` on each
top-level layer, then the whole model, over a 1-D device mesh: gloo on the CPU, NCCL on GPUs):
each rank keeps a shard of every parameter, gradient and optimizer state, gathered for a layer's
forward and backward. Every rank then runs the same forwards, so evaluation splits are not shared
out (each rank evaluates the whole split), and checkpoints gather the full tensors on every rank
(`engine.train.checkpoint.state_dict_for_save`): the files are those of a 1-process run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.distributed as dist

from engine.train.errors import TrainingError

__all__ = ["Ranks"]

Batches = Iterator[tuple[torch.Tensor, torch.Tensor]]
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class _Rows:
    """Rows of an evaluation split (batched by index, as `metrics.iter_batches` reads `.x`/`.y`)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)


class Ranks:
    """This process's place in the run's process group (rank, world size) and what it shares."""

    def __init__(self, rank: int, world: int, local_rank: int = 0, strategy: str = "ddp") -> None:
        self.rank, self.world, self.local_rank, self.strategy = rank, world, local_rank, strategy
        self.scale = 1.0  # of the current batch's loss: rows here * world / rows in the batch

    @property
    def sharded(self) -> bool:
        """The model's parameters are sharded over the ranks (FSDP): every rank runs every forward."""
        return self.strategy == "fsdp"

    @classmethod
    def current(cls, processes: int, strategy: str = "ddp") -> Ranks | None:
        """The process group's ranks for a run of `processes` (None for a 1-process run)."""
        initialized = dist.is_available() and dist.is_initialized()
        if processes == 1 and (not initialized or dist.get_world_size() == 1):
            return None
        if not initialized:
            raise TrainingError(
                f"processes {processes}: train() runs one rank of a multi-process run; start the run "
                "with engine.train.distributed (the worker does) or torchrun",
                field="processes",
            )
        world = dist.get_world_size()
        if world != processes:
            raise TrainingError(
                f"the config asks for {processes} processes but the process group has {world} ranks",
                field="processes",
            )
        return cls(dist.get_rank(), world, int(os.environ.get("LOCAL_RANK", "0")), strategy)

    @property
    def is_main(self) -> bool:
        """Rank 0: the one that reports, checkpoints and exports."""
        return self.rank == 0

    def device(self, device: torch.device) -> torch.device:
        """Each rank's own GPU (cuda:LOCAL_RANK); the CPU as it is."""
        if device.type != "cuda":
            return device
        count = torch.cuda.device_count()
        if self.local_rank >= count:
            raise TrainingError(
                f"rank {self.rank} trains on cuda:{self.local_rank}, but this node has {count} GPU(s): "
                "use at most one process per GPU, or device 'cpu'",
                field="processes",
            )
        return torch.device("cuda", self.local_rank)

    def wrap(self, model: torch.nn.Module, device: torch.device, *,
             param_dtype: torch.dtype | None = None) -> torch.nn.Module:
        """The model under DistributedDataParallel (gradients averaged in backward), or, sharded
        (FSDP), the model itself with its layers and then itself under `fully_shard`, in place:
        its parameters become DTensor shards (`rebind_optimizer` points the optimizer at them).
        `param_dtype`: FSDP's mixed precision (parameters gathered in it, gradients reduced in fp32)."""
        if not self.sharded:
            from torch.nn.parallel import DistributedDataParallel

            ids = [device.index] if device.type == "cuda" else None
            return DistributedDataParallel(model, device_ids=ids)
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        mesh = init_device_mesh(device.type, (self.world,))
        policy = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32) \
            if param_dtype is not None else MixedPrecisionPolicy()
        for layer in model.children():
            if any(True for _ in layer.parameters()):
                fully_shard(layer, mesh=mesh, mp_policy=policy)
        fully_shard(model, mesh=mesh, mp_policy=policy)
        return model

    @staticmethod
    def rebind_optimizer(optimizer: torch.optim.Optimizer, before: dict[int, str],
                         model: torch.nn.Module) -> None:
        """Point `optimizer` at the sharded parameters that replaced `before` ({id(old): name}).

        State already there (a resumed run's, full tensors alike on every rank) is sharded as the
        parameter is: each rank keeps its part.
        """
        from torch.distributed.tensor import DTensor, distribute_tensor

        now = dict(model.named_parameters())
        moved: dict[torch.nn.Parameter, dict[str, Any]] = {}
        for group in optimizer.param_groups:
            fresh = []
            for old in group["params"]:
                new = now[before[id(old)]]
                state = optimizer.state.pop(old, None)
                if state:
                    moved[new] = {
                        key: distribute_tensor(value.to(new.device), new.device_mesh, new.placements)
                        if isinstance(value, torch.Tensor) and isinstance(new, DTensor)
                        and value.shape == new.shape else value
                        for key, value in state.items()
                    }
                fresh.append(new)
            group["params"] = fresh
        optimizer.state.update(moved)

    def shard(self, batches: Batches) -> Batches:
        """This rank's rows `rank::world` of every global batch; sets `scale` for its loss."""
        rank, world = self.rank, self.world
        for xb, yb in batches:
            rows = xb.shape[0]
            x, y = xb[rank::world], yb[rank::world]
            self.scale = x.shape[0] * world / rows
            yield x, y

    def scaled_loss(self, loss_fn: LossFn) -> LossFn:
        """`loss_fn` times this batch's `scale`; an empty share gives a zero that still backpropagates."""

        def loss(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            scale = self.scale
            if scale == 0.0:
                return out.sum() * 0.0  # DDP's all-reduce still needs this rank's (zero) gradient
            if scale == 1.0:
                return loss_fn(out, target)
            return loss_fn(out, target) * scale

        return loss

    def agreed_stop(self, should_stop: Callable[[], bool] | None) -> Callable[[], bool]:
        """A stop check every rank answers alike: true on all when it is true on any."""
        flag = torch.zeros(1, dtype=torch.int32)

        def stop() -> bool:
            flag.fill_(1 if should_stop is not None and should_stop() else 0)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            return bool(flag.item())

        return stop

    def reduce_window(
        self, losses: list[float], hits: int | None, samples: int
    ) -> tuple[list[float], int | None, int]:
        """A train window over all ranks: each step's global loss, hits and rows summed."""
        tail = [float(hits or 0), float(samples)]
        packed = torch.tensor([*losses, *tail], dtype=torch.float64)
        dist.all_reduce(packed, op=dist.ReduceOp.SUM)
        values = packed.tolist()
        # Each rank's loss is its scaled share, so the ranks' losses sum to world * the batch's mean.
        steps = [v / self.world for v in values[: len(losses)]]
        total_hits = int(round(values[-2])) if hits is not None else None
        return steps, total_hits, int(round(values[-1]))

    def shard_split(self, data: Any) -> Any | None:
        """This rank's rows `rank::world` of an evaluation split (None: evaluate all of it here).

        Splits held as tensors are shared out; a lazily decoded one (an image archive), or one
        with fewer rows than ranks, is evaluated whole on every rank (the same numbers).
        """
        x, y = getattr(data, "x", None), getattr(data, "y", None)
        if (
            self.sharded  # every rank runs the same forwards, so each evaluates the whole split
            or not isinstance(x, torch.Tensor)
            or not isinstance(y, torch.Tensor)
            or len(x) < self.world
        ):
            return None
        return _Rows(x[self.rank :: self.world], y[self.rank :: self.world])

    def sum_values(self, values: list[float]) -> list[float]:
        """`values` summed over the ranks (in double precision)."""
        packed = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(packed, op=dist.ReduceOp.SUM)
        return [float(v) for v in packed.tolist()]

    def gather_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """Every rank's `rows` (same trailing shape), concatenated in rank order."""
        counts = torch.zeros(self.world, dtype=torch.int64)
        counts[self.rank] = rows.shape[0]
        dist.all_reduce(counts, op=dist.ReduceOp.SUM)
        most = int(counts.max().item())
        padded = rows.new_zeros((most, *rows.shape[1:]))
        padded[: rows.shape[0]] = rows
        parts = [torch.empty_like(padded) for _ in range(self.world)]
        dist.all_gather(parts, padded.contiguous())
        return torch.cat([part[: int(n)] for part, n in zip(parts, counts.tolist(), strict=True)])

    def barrier(self) -> None:
        """Wait for every rank (CPU-side; gloo and nccl alike)."""
        dist.barrier()

    def describe(self) -> dict[str, Any]:
        """{rank, world} for logs and result files."""
        return {"rank": self.rank, "world": self.world}
