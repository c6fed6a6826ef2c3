"""`make gpu-check`: what only a CUDA machine can show, in a few minutes, on one screen.

    .venv/bin/python scripts/gpu_check.py [--epochs 15] [--device cuda] [--skip-compile]

1. Trains the digits CNN (examples/specs/digits_cnn.json) through `engine.train` in fp32, in bf16
   and with `torch.compile`, and times a hand-written PyTorch loop on the same GPU with the same
   model (`engine.build`, same seed), the same batches (same seeded order) and the same optimizer:
   samples/s of each, and the engine's share of the hand loop's speed.
2. Export parity of CUDA-trained weights: the fp32 model is exported (`engine.export.export_dir`),
   the generated model.py is loaded with model.safetensors on the CPU, and its outputs are
   compared with the trained model's (on the CPU: to float rounding; on the GPU: within TF32's
   error, and the same predicted class).
3. With two or more GPUs (and an engine that has `TrainConfig.processes`): a 2-process NCCL run,
   launched as a worker launches one (`engine.train.distributed.launch`: PyTorch's elastic
   launcher), its samples/s, accuracy, and the two ranks holding the same weights; then the same
   run with `strategy: fsdp` (the model sharded over the two GPUs by FSDP2).

Prints a summary table; exits 1 when a check fails. On a machine without CUDA it says so and exits
0 (`--device cpu` runs every step on the CPU instead, gloo for the 2-process run, to try the
script itself: slow).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.util
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.build import build  # noqa: E402
from engine.data import DataRecipe, load_dataset  # noqa: E402
from engine.spec import parse_spec  # noqa: E402
from engine.train import ListSink, TrainConfig, train  # noqa: E402
from engine.train.metrics import iter_batches  # noqa: E402

SPEC = ROOT / "examples" / "specs" / "digits_cnn.json"
BATCH_SIZE = 64
LR = 0.003
SEED = 0
MIN_ACCURACY = 0.9  # the digits CNN reaches ~0.97 in 15 epochs; below this something is wrong
SKIP_EPOCHS = 2  # the first epochs compile, warm up cuDNN and the allocator: not timed
NO_CUDA = "no CUDA device: nothing to check"


@dataclass
class Row:
    """One line of the summary."""

    check: str
    engine: str = ""
    hand: str = ""
    ratio: str = ""
    result: str = ""
    ok: bool = True
    notes: list[str] = field(default_factory=list)


def digits() -> Any:
    """The built-in digits splits (1257 train, 270 val, 270 test rows of 1x8x8)."""
    return load_dataset(
        DataRecipe.model_validate({"source": {"kind": "builtin", "name": "digits"}})
    )


def digits_cnn() -> Any:
    """The example CNN's spec."""
    return parse_spec(json.loads(SPEC.read_text()))


def config(device: str, epochs: int, steps_per_epoch: int, **extra: Any) -> dict[str, Any]:
    """The run's config; one metric window per epoch, so each window times one epoch's steps."""
    return {
        "epochs": epochs,
        "batch_size": BATCH_SIZE,
        "device": device,
        "seed": SEED,
        "optimizer": {"name": "adam", "lr": LR},
        "log_every": steps_per_epoch,
        **extra,
    }


def timed_epochs(rates: list[float]) -> float:
    """The median samples/s of the epochs after the warm-up ones (nan when nothing was timed)."""
    return statistics.median(rates[SKIP_EPOCHS:] or rates) if rates else float("nan")


def engine_run(spec: Any, splits: Any, cfg: dict[str, Any]) -> tuple[float, float, Any]:
    """(samples/s, test accuracy, result) of `engine.train` with this config."""
    sink = ListSink()
    result = train(spec, splits, cfg, sink=sink)
    rates = [value for _, value in sink.series("samples_per_s")]
    return timed_epochs(rates), float(result.metrics["test/accuracy"]), result


def hand_loop(
    spec: Any,
    splits: Any,
    device: torch.device,
    epochs: int,
    *,
    precision: str,
    compile_model: bool,
) -> float:
    """samples/s of a plain PyTorch loop: the same model, batches, optimizer and precision."""
    model = build(spec, seed=SEED).to(device)
    model.train()
    forward: Any = torch.compile(model) if compile_model else model
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    loss_fn = torch.nn.CrossEntropyLoss()
    autocast: Any = (
        (lambda: torch.autocast(device.type, dtype=torch.bfloat16))
        if precision == "bf16"
        else contextlib.nullcontext
    )
    generator = torch.Generator().manual_seed(SEED)
    rates = []
    for _ in range(epochs):
        batches = iter_batches(
            splits.train, BATCH_SIZE, shuffle=True, generator=generator, augment=True
        )
        synchronize(device)
        start, samples = time.perf_counter(), 0
        for x, y in batches:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with autocast():
                loss = loss_fn(forward(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            samples += x.shape[0]
        synchronize(device)
        rates.append(samples / (time.perf_counter() - start))
    return timed_epochs(rates)


def synchronize(device: torch.device) -> None:
    """Wait for the GPU's queued work (timing must not end before the work does)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def speed_rows(
    spec: Any,
    splits: Any,
    device: torch.device,
    epochs: int,
    skip_compile: bool,
    steps_per_epoch: int,
) -> tuple[list[Row], Any]:
    """fp32, bf16 and compiled runs against the hand loop; also the fp32 result (for export)."""
    modes = [("fp32", {}, "fp32", False), ("bf16", {"precision": "bf16"}, "bf16", False)]
    if not skip_compile:
        modes.append(("torch.compile", {"compile": True}, "fp32", True))
    rows, fp32_result = [], None
    for name, extra, precision, compile_model in modes:
        row = Row(f"train {name}")
        try:
            cfg = config(str(device), epochs, steps_per_epoch, **extra)
            engine_rate, accuracy, result = engine_run(spec, splits, cfg)
            hand_rate = hand_loop(
                spec, splits, device, epochs, precision=precision, compile_model=compile_model
            )
        except Exception as exc:  # one failed mode must not hide the others
            row.ok, row.result = (
                False,
                f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:60]}",
            )
            rows.append(row)
            continue
        if name == "fp32":
            fp32_result = result
        row.engine, row.hand = f"{engine_rate:,.0f}", f"{hand_rate:,.0f}"
        row.ratio = f"{engine_rate / hand_rate:.2f}x"
        row.ok = accuracy >= MIN_ACCURACY
        row.result = f"test acc {accuracy:.3f}" + ("" if row.ok else f" < {MIN_ACCURACY}")
        rows.append(row)
    return rows, fp32_result


def load_generated(export: Path) -> torch.nn.Module:
    """The export's model.py with its model.safetensors, as a user outside Netloom loads them."""
    from safetensors.torch import load_file

    module_spec = importlib.util.spec_from_file_location(
        f"exported_{uuid.uuid4().hex}", export / "model.py"
    )
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    net = module.Net()
    net.load_state_dict(load_file(str(export / "model.safetensors"), device="cpu"))
    return net.eval()


def export_row(
    spec: Any, splits: Any, result: Any, cfg: dict[str, Any], device: torch.device
) -> Row:
    """Export the trained model; compare the generated module on the CPU with the trained one."""
    from engine.export import export_dir

    row = Row("export parity")
    if result is None:
        return Row("export parity", result="skipped: the fp32 run failed", ok=False)
    trained = result.model.eval()
    x = splits.test.x
    with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
        export = export_dir(trained, spec, cfg, result.metrics, Path(tmp) / "export", onnx=False)
        generated = load_generated(export)
        on_cpu = generated(x)  # (N, 10)
        trained_cpu = copy.deepcopy(trained).cpu()(x)
        on_device = trained(x.to(device)).float().cpu()
    cpu_diff = float((on_cpu - trained_cpu).abs().max())
    device_diff = float((on_cpu - on_device).abs().max())
    same_class = float((on_cpu.argmax(1) == on_device.argmax(1)).float().mean())
    # On the CPU the same weights and ops give the same numbers; the GPU's convolutions use TF32.
    cpu_ok = torch.allclose(on_cpu, trained_cpu, rtol=1e-5, atol=1e-5)
    device_ok = torch.allclose(on_cpu, on_device, rtol=1e-2, atol=1e-2) and same_class >= 0.99
    row.ok = cpu_ok and device_ok
    row.result = (
        f"max|d| cpu {cpu_diff:.1e}, {device.type} {device_diff:.1e}; same class {same_class:.1%}"
    )
    return row


def distributed_row(device: torch.device, epochs: int, steps_per_epoch: int, strategy: str = "ddp") -> Row:
    """A 2-process run (NCCL; gloo with --device cpu) as a worker launches it, or why there is none;
    `strategy` "fsdp": the model sharded over the two ranks (FSDP2)."""
    row = Row(("2-process NCCL" if device.type == "cuda" else "2-process gloo")
              + (" FSDP" if strategy == "fsdp" else ""))
    if strategy != "ddp" and "strategy" not in TrainConfig.model_fields:
        row.result = "skipped: sharded runs not available"
        return row
    try:
        from engine.train.distributed import launch
    except ImportError:
        launch = None
    if "processes" not in TrainConfig.model_fields or launch is None:
        row.result = "skipped: multi-process runs not available"
        return row
    if device.type == "cuda" and torch.cuda.device_count() < 2:
        row.result = f"skipped: needs 2 GPUs, found {torch.cuda.device_count()}"
        return row
    from safetensors.torch import load_file

    job = {
        "spec": json.loads(SPEC.read_text()),
        "data": {"source": {"kind": "builtin", "name": "digits"}},
        "config": config(device.type, epochs, steps_per_epoch, processes=2,
                         **({"strategy": strategy} if strategy != "ddp" else {})),
        "out_dir": None,
        "resume_from": None,
        "init_from": None,
    }
    rates: list[float] = []

    def on_event(event: dict[str, Any]) -> None:
        if event.get("type") == "metric" and "samples_per_s" in event.get("values", {}):
            rates.append(float(event["values"]["samples_per_s"]))

    with tempfile.TemporaryDirectory() as tmp:
        try:
            result = launch(job, Path(tmp) / "job", on_event=on_event)
            ranks = [load_file(str(Path(tmp) / "job" / f"rank-{r}.safetensors")) for r in (0, 1)]
        except Exception as exc:
            row.ok = False
            row.result = f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:60]}"
            return row
    # DistributedDataParallel keeps the parameters equal on every rank (FSDP's ranks save the
    # gathered whole tensors) (buffers such as
    # BatchNorm's running statistics are each rank's own after the last step).
    parameters = {name for name, _ in build(digits_cnn(), seed=SEED).named_parameters()}
    same = all(torch.equal(ranks[0][name], ranks[1][name]) for name in parameters)
    accuracy = float(result.metrics["test/accuracy"])
    row.engine = f"{timed_epochs(rates):,.0f}"
    row.ok = accuracy >= MIN_ACCURACY and same
    row.result = (
        f"test acc {accuracy:.3f}"
        + ("" if accuracy >= MIN_ACCURACY else f" < {MIN_ACCURACY}")
        + ("; ranks' weights equal" if same else "; ranks' weights DIFFER")
    )
    return row


def status(row: Row) -> str:
    """ok, FAIL or skip."""
    if not row.ok:
        return "FAIL"
    return "skip" if row.result.startswith("skipped") else "ok"


def table(rows: list[Row]) -> Iterator[str]:
    """The summary, one line per check."""
    head = ("check", "engine samples/s", "hand loop", "engine/hand", "", "result")
    lines = [(r.check, r.engine, r.hand, r.ratio, status(r), r.result) for r in rows]
    widths = [max(len(str(line[i])) for line in [head, *lines]) for i in range(len(head))]
    for i, line in enumerate([head, *lines]):
        yield "  ".join(
            str(cell).ljust(width) for cell, width in zip(line, widths, strict=True)
        ).rstrip()
        if i == 0:
            yield "  ".join("-" * width for width in widths)


def main(argv: list[str] | None = None) -> int:
    """Run every check; print the table; 0 when all passed (or when there is no GPU)."""
    parser = argparse.ArgumentParser(
        prog="scripts/gpu_check.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument(
        "--device", default="cuda", help="cuda (default), cuda:N, or cpu to try the script"
    )
    parser.add_argument(
        "--skip-compile", action="store_true", help="leave out the torch.compile runs"
    )
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(NO_CUDA)
        return 0
    device = torch.device(args.device)
    started = time.monotonic()
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(
        f"gpu-check on {name} (torch {torch.__version__}, {torch.cuda.device_count()} CUDA device(s))",
        flush=True,
    )
    spec, splits = digits_cnn(), digits()
    steps_per_epoch = -(-len(splits.train.x) // BATCH_SIZE)
    rows, fp32_result = speed_rows(
        spec, splits, device, args.epochs, args.skip_compile, steps_per_epoch
    )
    rows.append(
        export_row(
            spec, splits, fp32_result, config(str(device), args.epochs, steps_per_epoch), device
        )
    )
    rows.append(distributed_row(device, args.epochs, steps_per_epoch))
    rows.append(distributed_row(device, args.epochs, steps_per_epoch, strategy="fsdp"))
    print()
    for line in table(rows):
        print(line)
    failed = [row.check for row in rows if not row.ok]
    ran = [row for row in rows if status(row) != "skip"]
    print(
        f"\n{len(ran) - len(failed)}/{len(ran)} checks passed in {time.monotonic() - started:.0f} s"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
