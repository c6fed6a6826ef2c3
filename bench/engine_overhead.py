"""What the engine costs over a hand-written PyTorch loop, on the same data, seed and batch size.

For the digits MLP and CNN (examples/specs), each repeat runs, in this order or reversed:

- plain: the network written by hand as an nn.Module, trained by a plain loop (shuffled index
  batches, Adam, cross-entropy, a validation pass per epoch and a test pass at the end);
- engine: the spec built by engine.build and trained by engine.train.train with a metric sink
  that stores every point (no checkpoints: out_dir=None).

Both are timed end to end (model construction included) and reported as training samples per
second of this process's CPU time (time.process_time, one intra-op thread by default): the
machine is shared, and CPU time is what other processes disturb least. The ratio engine/plain
is the figure of merit (>= 0.95 wanted). A second table compares
iterating an epoch through TensorSet.batches with plain tensor indexing.

    .venv/bin/python bench/engine_overhead.py [--repeats 9] [--epochs 30] [--batch-size 32] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from engine.data import DataRecipe, load_dataset
from engine.train import ListSink, train

ROOT = Path(__file__).resolve().parents[1]
_clock = time.process_time


class HandMLP(nn.Module):
    """examples/specs/digits_mlp.json written by hand."""

    def __init__(self) -> None:
        super().__init__()
        self.flat = nn.Flatten()
        self.fc1 = nn.Linear(64, 128)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(self.flat(x))))


class HandCNN(nn.Module):
    """examples/specs/digits_cnn.json written by hand."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool2 = nn.AdaptiveAvgPool2d((1, 1))
        self.logits = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(F.relu(self.bn1(self.conv1(x))))  # (B, 16, 4, 4)
        x = self.pool2(F.relu(self.conv2(x))).flatten(1)  # (B, 32)
        return self.logits(x)


def plain_run(make: type[nn.Module], splits, epochs: int, batch_size: int, seed: int) -> float:
    """The loop a person writes by hand; returns wall seconds."""
    start = _clock()
    torch.manual_seed(seed)
    model = make()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = splits.train.x, splits.train.y
    n = len(x)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        model.train()
        order = torch.randperm(n, generator=gen)
        for i in range(0, n, batch_size):
            idx = order[i : i + batch_size]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            (model(splits.val.x).argmax(1) == splits.val.y).float().mean().item()
    with torch.no_grad():
        (model(splits.test.x).argmax(1) == splits.test.y).float().mean().item()
    return _clock() - start


def engine_run(spec: dict, splits, epochs: int, batch_size: int, seed: int) -> float:
    """The same network as a spec, through engine.train.train with a storing sink."""
    start = _clock()
    sink = ListSink()
    train(spec, splits, {"epochs": epochs, "batch_size": batch_size, "seed": seed,
                         "device": "cpu"}, sink=sink)
    elapsed = _clock() - start
    assert sink.points
    return elapsed


def batches_plain(ts, batch_size: int, gen: torch.Generator) -> int:
    """One shuffled epoch by plain indexing; returns rows seen."""
    n = len(ts.x)
    order = torch.randperm(n, generator=gen)
    seen = 0
    for i in range(0, n, batch_size):
        idx = order[i : i + batch_size]
        xb, _yb = ts.x[idx], ts.y[idx]
        seen += len(xb)
    return seen


def batches_tensorset(ts, batch_size: int, gen: torch.Generator) -> int:
    """One shuffled epoch through TensorSet.batches."""
    seen = 0
    for xb, _yb in ts.batches(batch_size, shuffle=True, generator=gen):
        seen += len(xb)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--wall", action="store_true", help="time wall clock instead of CPU time")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    global _clock
    if args.wall:
        _clock = time.perf_counter

    splits = load_dataset(DataRecipe.model_validate({"source": {"kind": "builtin", "name": "digits"}}))
    samples = args.epochs * len(splits.train.x)
    rows = []
    for name, make in (("digits MLP", HandMLP), ("digits CNN", HandCNN)):
        spec_name = "digits_mlp" if make is HandMLP else "digits_cnn"
        spec = json.loads((ROOT / "examples" / "specs" / f"{spec_name}.json").read_text())
        # Warm up both paths once (lazy imports, allocator, oneDNN kernels).
        plain_run(make, splits, 1, args.batch_size, args.seed)
        engine_run(spec, splits, 1, args.batch_size, args.seed)
        plain_t, engine_t, ratios = [], [], []
        for r in range(args.repeats):
            # Alternate the order so drift on a shared machine hits both sides alike.
            if r % 2 == 0:
                p = plain_run(make, splits, args.epochs, args.batch_size, args.seed)
                e = engine_run(spec, splits, args.epochs, args.batch_size, args.seed)
            else:
                e = engine_run(spec, splits, args.epochs, args.batch_size, args.seed)
                p = plain_run(make, splits, args.epochs, args.batch_size, args.seed)
            plain_t.append(p)
            engine_t.append(e)
            ratios.append(p / e)
        rows.append((name, samples / statistics.median(plain_t), samples / statistics.median(engine_t),
                     statistics.median(ratios), min(ratios), max(ratios)))

    gen_a, gen_b = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    batch_rows = []
    for bs in (32, 256):
        plain_b, ts_b = [], []
        for _ in range(args.repeats * 3):
            t = _clock()
            seen = batches_plain(splits.train, bs, gen_a)
            plain_b.append(seen / (_clock() - t))
            t = _clock()
            seen = batches_tensorset(splits.train, bs, gen_b)
            ts_b.append(seen / (_clock() - t))
        batch_rows.append((bs, statistics.median(plain_b), statistics.median(ts_b)))

    clock = "wall-clock" if args.wall else "CPU-time"
    print(f"torch {torch.__version__}, {torch.get_num_threads()} intra-op thread(s), "
          f"{platform.machine()}, {clock} samples/s")
    print(f"digits, {len(splits.train.x)} training rows, batch {args.batch_size}, {args.epochs} epochs, "
          f"{args.repeats} interleaved repeats (median)\n")
    print("| network | plain loop samples/s | engine samples/s | engine/plain (median) | min..max |")
    print("|---|---:|---:|---:|---:|")
    for name, p, e, ratio, lo, hi in rows:
        print(f"| {name} | {p:,.0f} | {e:,.0f} | {ratio:.3f} | {lo:.3f}..{hi:.3f} |")
    print("\n| batch size | plain indexing rows/s | TensorSet.batches rows/s | ratio |")
    print("|---:|---:|---:|---:|")
    for bs, p, t in batch_rows:
        print(f"| {bs} | {p:,.0f} | {t:,.0f} | {t / p:.3f} |")


if __name__ == "__main__":
    main()
