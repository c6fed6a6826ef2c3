"""The training loop: spec + splits + config -> trained model, metrics and checkpoints."""

from __future__ import annotations

import contextlib
import json
import math
import random
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.train.callbacks import Callback, MetricSink, StopCheck, TrainState
from engine.train.checkpoint import latest_checkpoint, load_checkpoint, restore_rng, save_checkpoint
from engine.train.config import TrainConfig, parse_config
from engine.train.errors import TrainingError
from engine.train.metrics import (
    TaskSpec,
    adapt_target,
    dataset_len,
    evaluate,
    iter_batches,
    make_loss,
    resolve_task,
)

__all__ = ["train", "TrainResult", "resolve_device", "spec_to_json"]

_OOM = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)


@dataclass
class TrainResult:
    """What a finished (or cancelled, or early-stopped) run gives back."""

    status: str  # "succeeded" | "cancelled" | "stopped_early"
    metrics: dict[str, Any]
    steps: int
    epochs: int
    task: str
    best_checkpoint: Path | None = None
    last_checkpoint: Path | None = None
    out_dir: Path | None = None
    model: torch.nn.Module | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        """JSON-able summary (no model)."""
        return {
            "status": self.status,
            "metrics": self.metrics,
            "steps": self.steps,
            "epochs": self.epochs,
            "task": self.task,
            "best_checkpoint": str(self.best_checkpoint) if self.best_checkpoint else None,
            "last_checkpoint": str(self.last_checkpoint) if self.last_checkpoint else None,
            "out_dir": str(self.out_dir) if self.out_dir else None,
        }


def spec_to_json(spec: Any) -> Any:
    """A spec (GraphSpec, dict or JSON text) as a JSON-able dict; None stays None."""
    if spec is None:
        return None
    if hasattr(spec, "model_dump"):
        return spec.model_dump(mode="json", exclude_none=True)
    if isinstance(spec, (str, bytes)):
        return json.loads(spec)
    return spec


def resolve_device(name: str) -> torch.device:
    """Turn the config's device into a torch.device, with a clear error when it is absent."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise TrainingError(f"device {name!r} asked for, but CUDA is not available here", field="device")
    device = torch.device(name)
    if device.index is not None and device.index >= torch.cuda.device_count():
        raise TrainingError(
            f"device {name!r} does not exist; this machine has {torch.cuda.device_count()} GPU(s)",
            field="device",
        )
    return device


def _autocast_factory(precision: str, device: torch.device) -> Callable[[], Any]:
    if precision == "fp32":
        return contextlib.nullcontext
    if precision == "fp16":
        if device.type != "cuda":
            raise TrainingError(
                "precision 'fp16' needs a CUDA device; use 'bf16' or 'fp32' on CPU",
                field="precision",
            )
        dtype = torch.float16
    else:
        if device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise TrainingError(
                f"precision 'bf16' is not supported by {torch.cuda.get_device_name(device)}; "
                "use 'fp16' or 'fp32'",
                field="precision",
            )
        dtype = torch.bfloat16
    return lambda: torch.autocast(device_type=device.type, dtype=dtype)


def _make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    o = cfg.optimizer
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise TrainingError("the model has no trainable parameters")
    if o.name == "sgd":
        return torch.optim.SGD(
            params, lr=o.lr, momentum=o.momentum, nesterov=o.nesterov, weight_decay=o.weight_decay
        )
    if o.name == "adam":
        return torch.optim.Adam(params, lr=o.lr, betas=o.betas, weight_decay=o.weight_decay)
    if o.name == "adamw":
        return torch.optim.AdamW(params, lr=o.lr, betas=o.betas, weight_decay=o.weight_decay)
    return torch.optim.RMSprop(params, lr=o.lr, momentum=o.momentum, weight_decay=o.weight_decay)


def _make_scheduler(optimizer: torch.optim.Optimizer, cfg: TrainConfig, total_steps: int) -> Any:
    s = cfg.scheduler
    sched = torch.optim.lr_scheduler
    if s.name == "step":
        return sched.StepLR(optimizer, step_size=s.step_size, gamma=s.gamma)
    if s.name == "cosine":
        return sched.CosineAnnealingLR(optimizer, T_max=max(total_steps, 1), eta_min=s.eta_min)
    if s.name == "onecycle":
        return sched.OneCycleLR(
            optimizer,
            max_lr=s.max_lr or cfg.optimizer.lr,
            total_steps=max(total_steps, 2),
            pct_start=s.pct_start,
            cycle_momentum=cfg.optimizer.name in ("sgd", "rmsprop", "adam", "adamw"),
        )
    if s.name == "plateau":
        return sched.ReduceLROnPlateau(optimizer, mode=s.mode, factor=s.factor, patience=s.patience)
    return None


def _seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)


def _float_metrics(values: Mapping[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _improved(value: float, best: float | None, mode: str, min_delta: float = 0.0) -> bool:
    if best is None or math.isnan(best):
        return not math.isnan(value)
    return value < best - min_delta if mode == "min" else value > best + min_delta


class _Hooks:
    """Callbacks resolved once, so a step costs one loop over bound methods."""

    def __init__(self, callbacks: Iterable[Callback | Any]) -> None:
        callbacks = list(callbacks)
        self._by_name: dict[str, list[Callable[..., Any]]] = {}
        for name in (
            "on_train_start",
            "on_train_batch_end",
            "on_validation_end",
            "on_checkpoint",
            "on_train_end",
            "on_exception",
        ):
            self._by_name[name] = [getattr(cb, name) for cb in callbacks if hasattr(cb, name)]

    def __call__(self, name: str, *args: Any) -> None:
        for hook in self._by_name[name]:
            hook(*args)

    def has(self, name: str) -> bool:
        return bool(self._by_name[name])

    def bound(self, name: str) -> list[Callable[..., Any]]:
        """The hooks of one name, for a loop that calls them itself."""
        return self._by_name[name]


def _check_single_output(out: Any) -> torch.Tensor:
    if isinstance(out, torch.Tensor):
        return out
    raise TrainingError(
        f"training needs a graph with exactly one output; this one returns {len(out)} outputs"
    )


def _check_data_fits(spec: Any, x: torch.Tensor) -> None:
    """The dataset's sample shape and dtype must be what the graph's input declares."""
    if len(spec.inputs) != 1:
        raise TrainingError(
            f"training needs a graph with exactly one input; this one has {len(spec.inputs)} "
            f"({', '.join(i.id for i in spec.inputs)})"
        )
    inp = spec.inputs[0]
    if list(x.shape[1:]) != list(inp.shape):
        raise TrainingError(
            f"the data has samples of shape {list(x.shape[1:])} but the graph input "
            f"{inp.id!r} is {list(inp.shape)}"
        )
    if (inp.dtype == "int64") != (not torch.is_floating_point(x)):
        raise TrainingError(
            f"the data holds {str(x.dtype).removeprefix('torch.')} values but the graph input "
            f"{inp.id!r} is {inp.dtype}"
        )


def train(
    spec: Any,
    splits: Any,
    config: TrainConfig | Mapping[str, Any] | None = None,
    *,
    out_dir: Path | str | None = None,
    callbacks: Iterable[Callback | Any] = (),
    sink: MetricSink | None = None,
    should_stop: StopCheck | None = None,
    resume_from: Path | str | None = None,
    model: torch.nn.Module | None = None,
) -> TrainResult:
    """Train `build(spec)` (or `model`) on `splits` and return metrics and checkpoint paths.

    Args:
        spec: the graph spec (GraphSpec or dict); may be None when `model` is given.
        splits: `Splits(train, val, test, info)` from `engine.data.load_dataset`.
        config: TrainConfig or a dict for it.
        out_dir: where `checkpoints/` go; None writes nothing.
        callbacks: objects with any of the Lightning-named hooks.
        sink: receives metric points (`train/loss` every `log_every` steps, `val/*` per epoch).
        should_stop: consulted before every step; True cancels within one step.
        resume_from: a checkpoint directory, or a run directory / `checkpoints/` (latest wins).
        model: an already built module to train instead of building `spec`.
    """
    cfg = parse_config(config)
    device = resolve_device(cfg.device)
    autocast = _autocast_factory(cfg.precision, device)
    out_path = Path(out_dir) if out_dir is not None else None
    hooks = _Hooks(callbacks)

    if spec is not None and not hasattr(spec, "inputs"):
        from engine.spec import parse_spec

        spec = parse_spec(spec)
    _seed_everything(cfg.seed)
    if model is None:
        if spec is None:
            raise TrainingError("train() needs a spec or a model")
        from engine.build import build

        model = build(spec, seed=cfg.seed)
    model = model.to(device)
    # Training randomness (dropout, augmentation) starts from the seed whatever building drew.
    _seed_everything(cfg.seed)

    train_set, val_set, test_set = splits.train, splits.val, splits.test
    info = getattr(splits, "info", None)
    n_train = dataset_len(train_set)
    if n_train == 0:
        raise TrainingError("the training split is empty")

    first_x, first_y = next(iter_batches(train_set, 1, shuffle=False, augment=False))
    if spec is not None:
        _check_data_fits(spec, first_x)
    with torch.no_grad():
        was_training = model.training
        model.eval()
        with autocast():
            probe = _check_single_output(model(first_x.to(device)))
        model.train(was_training)
    task: TaskSpec = resolve_task(
        task=cfg.task, loss=cfg.loss, output_shape=tuple(probe.shape[1:]), y=first_y, info=info
    )
    loss_fn = make_loss(task)

    bs = cfg.batch_size
    eval_bs = cfg.eval_batch_size or max(bs, 256)
    steps_per_epoch = math.ceil(n_train / bs)
    total_steps = cfg.epochs * steps_per_epoch
    if cfg.max_steps is not None:
        total_steps = min(total_steps, cfg.max_steps)

    optimizer = _make_optimizer(model, cfg)
    scheduler = _make_scheduler(optimizer, cfg, total_steps)
    per_step_scheduler = cfg.scheduler.name in ("cosine", "onecycle")
    scaler = torch.amp.GradScaler(device.type, enabled=cfg.precision == "fp16")
    generator = torch.Generator().manual_seed(cfg.seed)

    forward_model: torch.nn.Module = model
    if cfg.compile:
        forward_model = torch.compile(model)  # type: ignore[assignment]

    spec_json = spec_to_json(spec)
    state = TrainState(
        config=cfg,
        model=model,
        optimizer=optimizer,
        epochs=cfg.epochs,
        steps_per_epoch=steps_per_epoch,
        total_steps=total_steps,
        device=str(device),
    )
    monitor = cfg.early_stopping.metric if cfg.early_stopping else "val/loss"
    monitor_mode = cfg.early_stopping.mode if cfg.early_stopping else "min"
    book: dict[str, Any] = {"best_value": None, "bad_epochs": 0, "best_checkpoint": None}
    last_val: dict[str, Any] = {}
    last_train: dict[str, float] = {}
    last_checkpoint: Path | None = None
    epoch_generator_state = generator.get_state()

    if resume_from is not None:
        ck_path = latest_checkpoint(Path(resume_from) / "checkpoints") or latest_checkpoint(
            Path(resume_from)
        )
        if ck_path is None:
            raise TrainingError(f"no checkpoint found in {resume_from}")
        ck = load_checkpoint(ck_path)
        try:
            model.load_state_dict(ck.model)
        except RuntimeError as exc:
            raise TrainingError(
                f"checkpoint {ck_path} does not fit this graph: {str(exc).splitlines()[0]}"
            ) from None
        if ck.optimizer is not None:
            optimizer.load_state_dict(ck.optimizer)
        if scheduler is not None and ck.scheduler is not None:
            scheduler.load_state_dict(ck.scheduler)
        if ck.scaler is not None and scaler.is_enabled():
            scaler.load_state_dict(ck.scaler)
        state.epoch, state.step = ck.epoch, ck.step
        state.batch_in_epoch = int(ck.state.get("batch_in_epoch", 0))
        trainer_state = ck.state.get("trainer", {})
        book.update(trainer_state.get("book", {}))
        last_val = trainer_state.get("last_val", {})
        last_train = trainer_state.get("last_train", {})
        restore_rng(ck.rng["tensors"], ck.rng["extra"], generator)
        epoch_generator_state = generator.get_state()
        last_checkpoint = ck_path

    def checkpoint(name: str, generator_state: torch.Tensor) -> Path | None:
        if out_path is None:
            return None
        path = out_path / "checkpoints" / name
        save_checkpoint(
            path,
            model=model,
            optimizer=optimizer,
            scheduler=scheduler,
            scaler=scaler,
            generator_state=generator_state,
            state={
                "epoch": state.epoch,
                "step": state.step,
                "batch_in_epoch": state.batch_in_epoch,
                "config": cfg.model_dump(mode="json"),
                "spec": spec_json,
                "task": task.task,
                "trainer": {"book": book, "last_val": last_val, "last_train": last_train},
            },
        )
        hooks("on_checkpoint", state, path)
        return path

    def prune_epoch_checkpoints() -> None:
        assert out_path is not None
        numbered = sorted((out_path / "checkpoints").glob("epoch-*"))
        for old in numbered[: -cfg.keep_checkpoints]:
            shutil.rmtree(old, ignore_errors=True)

    # Batches from an in-memory CPU set are already where a CPU run needs them.
    to_device = device.type != "cpu"
    # Per-step values stay on the device; they are read once every `log_every` steps.
    loss_window: list[torch.Tensor] = []
    # Train accuracy: logits and targets are kept (detached views, no kernel launched) and
    # compared once per log window; `correct` folds them in early when they grow large.
    logits_window: list[torch.Tensor] = []
    targets_window: list[torch.Tensor] = []
    buffered = 0
    correct = torch.zeros((), dtype=torch.int64, device=device)
    folded = False  # whether `correct` holds anything (it is only used for long windows)
    window_samples = 0
    window_first_step = state.step
    window_start = time.perf_counter()
    count_correct = task.kind == "multiclass"

    def window_hits() -> torch.Tensor:
        logits = logits_window[0] if len(logits_window) == 1 else torch.cat(logits_window)
        targets = targets_window[0] if len(targets_window) == 1 else torch.cat(targets_window)
        logits_window.clear()
        targets_window.clear()
        return logits.argmax(dim=1).eq_(targets).sum()  # in place: one allocation fewer

    def fold_correct() -> None:
        nonlocal buffered, folded
        if logits_window:
            correct.add_(window_hits())
            buffered = 0
            folded = True

    def flush_window() -> float | None:
        nonlocal window_samples, window_first_step, window_start, buffered, folded
        if not loss_window:
            return None
        if to_device:
            losses = torch.stack(loss_window).float().tolist()  # one device sync per window
        else:
            # On the CPU a read is no sync, and reading each value skips the stack's kernel.
            losses = [t.item() for t in loss_window]
        for offset, value in enumerate(losses):
            if not math.isfinite(value):
                kind = "NaN" if math.isnan(value) else "infinite"
                step = window_first_step + offset + 1
                raise TrainingError(f"loss is {kind} at step {step}; stopping", step=step)
        elapsed = max(time.perf_counter() - window_start, 1e-9)
        values = {
            "train/loss": sum(losses) / len(losses),
            "lr": float(optimizer.param_groups[0]["lr"]),
            "samples_per_s": window_samples / elapsed,
        }
        if count_correct:
            hits = window_hits() if logits_window else correct
            if folded and hits is not correct:
                hits = hits + correct
            values["train/accuracy"] = float(hits.item()) / window_samples
            if folded:
                correct.zero_()
                folded = False
            buffered = 0
        last_train.update(values)
        state.metrics.update(values)
        if sink is not None:
            sink.log(state.step, state.epoch_progress, values)
        loss_window.clear()
        window_samples = 0
        window_first_step = state.step
        window_start = time.perf_counter()
        return values["train/loss"]

    status = "succeeded"
    params = [p for g in optimizer.param_groups for p in g["params"]]
    train_transform = getattr(train_set, "transform", None)

    def epoch_batches(skip: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        if skip == 0:
            return iter_batches(train_set, bs, shuffle=True, generator=generator, augment=True)
        return resumed_batches(skip)

    def resumed_batches(skip: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        # Resuming mid-epoch: redraw the epoch's order and skip what was done. The skipped
        # batches must not run the augmentation (it draws from the global RNG), so this epoch
        # is read without it and augmented here, exactly as TensorSet.batches would.
        plain = train_transform is not None
        batches = iter_batches(train_set, bs, shuffle=True, generator=generator, augment=not plain)
        for i, (xb, yb) in enumerate(batches):
            if i < skip:
                continue
            if train_transform is not None:
                with torch.no_grad():
                    xb = train_transform(xb)
            yield xb, yb

    # Hot-loop constants, looked up once instead of on every step.
    use_autocast = cfg.precision != "fp32"
    scaled = scaler.is_enabled()
    grad_clip = cfg.grad_clip
    log_every = cfg.log_every
    batch_end_hooks = hooks.bound("on_train_batch_end")
    # A 1-D int64 target is what cross-entropy takes as is (adapt_target would return it).
    target_as_is = task.kind == "multiclass" and first_y.dim() == 1 and first_y.dtype == torch.int64

    try:
        hooks("on_train_start", state)
        model.train()
        window_start = time.perf_counter()
        stop_training = False
        while state.epoch < cfg.epochs and not stop_training:
            if state.step >= total_steps:
                break
            if state.batch_in_epoch == 0:
                epoch_generator_state = generator.get_state()
            skip = state.batch_in_epoch
            next_batch = epoch_batches(skip).__next__
            while True:
                # Asked before the next batch is drawn: drawing runs the augmentation, which
                # moves the global RNG that a checkpoint taken now must capture untouched.
                if should_stop is not None and should_stop():
                    status = "cancelled"
                    break
                try:
                    x, y = next_batch()
                except StopIteration:
                    break
                if to_device:
                    x = x.to(device, non_blocking=True)
                    y = y.to(device, non_blocking=True)
                if use_autocast:
                    with autocast():
                        out = _check_single_output(forward_model(x))
                        target = adapt_target(task, out, y)
                        loss = loss_fn(out, target)
                else:  # the same three lines, without entering a context on every step
                    out = _check_single_output(forward_model(x))
                    target = y if target_as_is else adapt_target(task, out, y)
                    loss = loss_fn(out, target)
                optimizer.zero_grad(set_to_none=True)
                if scaled:
                    scaler.scale(loss).backward()
                    if grad_clip is not None:
                        scaler.unscale_(optimizer)
                        torch.nn.utils.clip_grad_norm_(params, grad_clip)
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    loss.backward()
                    if grad_clip is not None:
                        torch.nn.utils.clip_grad_norm_(params, grad_clip)
                    optimizer.step()
                if per_step_scheduler:
                    scheduler.step()
                state.step += 1
                state.batch_in_epoch += 1
                loss_window.append(loss.detach())
                if count_correct:
                    logits_window.append(out.detach())
                    targets_window.append(target)
                    buffered += out.numel()
                    if buffered > 1 << 22:  # bound the memory a long log window holds
                        fold_correct()
                window_samples += x.shape[0]
                logged = flush_window() if state.step % log_every == 0 else None
                for hook in batch_end_hooks:
                    hook(state, logged)
                if state.step >= total_steps:
                    stop_training = True
                    break
            if status == "cancelled":
                flush_window()
                last_checkpoint = checkpoint(f"step-{state.step:07d}", epoch_generator_state) or last_checkpoint
                break
            flush_window()
            state.epoch += 1
            state.batch_in_epoch = 0
            # Validation.
            if dataset_len(val_set) > 0:
                last_val = evaluate(
                    forward_model, val_set, task, prefix="val", batch_size=eval_bs,
                    device=device, autocast=autocast,
                )
                state.metrics.update(last_val)
                val_floats = _float_metrics(last_val)
                if sink is not None:
                    sink.log(state.step, float(state.epoch), val_floats)
                hooks("on_validation_end", state, val_floats)
            elif cfg.early_stopping is not None:
                raise TrainingError(
                    "early_stopping needs a validation split; set split.val above 0",
                    field="early_stopping",
                )
            if cfg.scheduler.name == "step":
                scheduler.step()
            elif cfg.scheduler.name == "plateau" and last_val:
                if cfg.scheduler.metric not in last_val:
                    raise TrainingError(
                        f"scheduler.metric {cfg.scheduler.metric!r} is not a validation metric; "
                        f"choose one of {', '.join(sorted(_float_metrics(last_val)))}",
                        field="scheduler.metric",
                    )
                scheduler.step(last_val[cfg.scheduler.metric])
            # Best checkpoint and early stopping on the monitored metric.
            early_stop = False
            if last_val:
                if monitor not in last_val:
                    raise TrainingError(
                        f"early_stopping.metric {monitor!r} is not a validation metric; "
                        f"choose one of {', '.join(sorted(_float_metrics(last_val)))}",
                        field="early_stopping.metric",
                    )
                value = float(last_val[monitor])
                min_delta = cfg.early_stopping.min_delta if cfg.early_stopping else 0.0
                if _improved(value, book["best_value"], monitor_mode, min_delta):
                    book["best_value"] = value
                    book["bad_epochs"] = 0
                    best = None
                    if out_path is not None:  # the generator's state is a copy; skip it unused
                        best = checkpoint("best", generator.get_state())
                    if best is not None:
                        book["best_checkpoint"] = str(best)
                else:
                    book["bad_epochs"] += 1
                    if cfg.early_stopping and book["bad_epochs"] >= cfg.early_stopping.patience:
                        early_stop = True
            last_epoch = state.epoch >= cfg.epochs or stop_training or early_stop
            if out_path is not None and (state.epoch % cfg.checkpoint_every == 0 or last_epoch):
                last_checkpoint = checkpoint(f"epoch-{state.epoch:04d}", generator.get_state())
                prune_epoch_checkpoints()
            if early_stop:
                status = "stopped_early"
                break
            window_start = time.perf_counter()  # samples/s counts training time only

        metrics: dict[str, Any] = {**last_train, **last_val}
        if status != "cancelled" and dataset_len(test_set) > 0:
            test_metrics = evaluate(
                forward_model, test_set, task, prefix="test", batch_size=eval_bs,
                device=device, autocast=autocast,
            )
            metrics.update(test_metrics)
            if sink is not None:
                sink.log(state.step, state.epoch_progress, _float_metrics(test_metrics))
        metrics["epochs"] = state.epoch
        metrics["steps"] = state.step
        state.metrics = metrics
        state.status = status
        best_path = Path(book["best_checkpoint"]) if book["best_checkpoint"] else None
        result = TrainResult(
            status=status,
            metrics=metrics,
            steps=state.step,
            epochs=state.epoch,
            task=task.task,
            best_checkpoint=best_path if best_path is not None and best_path.exists() else None,
            last_checkpoint=last_checkpoint,
            out_dir=out_path,
            model=model,
        )
        hooks("on_train_end", state, result)
        return result
    except _OOM:
        err = TrainingError(
            f"out of memory on {device} at batch size {bs}; lower batch_size "
            f"(or use precision bf16/fp16)",
            step=state.step,
            field="batch_size",
        )
        state.status = "failed"
        hooks("on_exception", state, err)
        raise err from None
    except BaseException as exc:
        state.status = "failed"
        hooks("on_exception", state, exc)
        raise
