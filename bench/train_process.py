"""Whole-process wall time of `python -m engine train` against a hand-written training script.

Both are separate Python processes, started from scratch, alternated (engine first on even
rounds, the script first on odd ones), five of each by default; the figure of merit is the
median engine wall time over the median script wall time. The CPU time of each process
(user + system, from getrusage) is reported beside it: on a shared machine it is what other
work disturbs least.

- engine: `python -m engine train examples/specs/digits_mlp.json --data digits --epochs 60
  --out DIR --quiet` (imports, data, 60 epochs with a validation pass each, a checkpoint per
  epoch and a best one, the test pass, the export directory with ONNX).
- script: `python bench/train_process.py --by-hand DIR`, the same job written as a person
  would write it with torch, scikit-learn, safetensors and onnx: digits scaled to [0, 1],
  stratified 70/15/15 split, per-channel standardisation, Flatten-Linear(128)-ReLU-Linear(10),
  Adam 1e-3, batch 32, 60 epochs, validation loss and accuracy per epoch, a checkpoint per
  epoch (model + optimizer safetensors, a JSON of counters; the last three kept) and a best
  one, test accuracy, then model.safetensors, model.onnx (checked) and metrics.json.
- bare (reported for scale, not part of the ratio): the same script without checkpoints and
  ONNX, so `script / bare` is what saving costs a hand-written script.

Every process gets the same environment, with OMP_NUM_THREADS/MKL_NUM_THREADS set to
`--threads` (default 1: the machine is shared; 0 leaves them alone).

    .venv/bin/python bench/train_process.py [--repeats 5] [--epochs 60] [--threads 1] [--no-bare]
        [--compare DIR]   # another checkout's engine as one more alternated row
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "specs" / "digits_mlp.json"


def by_hand(out: Path, epochs: int, save: bool) -> None:
    """The hand-written script: what a person writes to train and save the digits MLP."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from safetensors.torch import save_file
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from torch import nn

    torch.manual_seed(0)
    digits = load_digits()
    x_all = (np.asarray(digits.images, dtype=np.float32) / 16.0)[:, None]  # (N, 1, 8, 8)
    y_all = np.asarray(digits.target, dtype=np.int64)
    idx = np.arange(len(y_all))
    rest, test_idx = train_test_split(idx, test_size=0.15, stratify=y_all, random_state=0)
    train_idx, val_idx = train_test_split(
        rest, test_size=0.15 / 0.85, stratify=y_all[rest], random_state=0
    )
    x, y = torch.from_numpy(x_all), torch.from_numpy(y_all)
    mean, std = x[train_idx].mean(), x[train_idx].std()
    x = (x - mean) / std
    x_train, y_train = x[train_idx], y[train_idx]
    x_val, y_val = x[val_idx], y[val_idx]
    x_test, y_test = x[test_idx], y[test_idx]

    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    ckpts = out / "checkpoints"
    best = float("inf")

    def save_checkpoint(path: Path, epoch: int) -> None:
        path.mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, path / "model.safetensors")
        tensors = {
            f"{i}/{name}": value
            for i, state in opt.state_dict()["state"].items()
            for name, value in state.items()
        }
        save_file(tensors, path / "optimizer.safetensors")
        (path / "state.json").write_text(json.dumps({"epoch": epoch, "best": best}))

    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(len(x_train), generator=gen)
        for i in range(0, len(order), 32):
            batch = order[i : i + 32]
            loss = F.cross_entropy(model(x_train[batch]), y_train[batch])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            out_val = model(x_val)
            val_loss = F.cross_entropy(out_val, y_val).item()
            (out_val.argmax(1) == y_val).float().mean().item()
        if save:
            if val_loss < best:
                best = val_loss
                save_checkpoint(ckpts / "best", epoch)
            save_checkpoint(ckpts / f"epoch-{epoch:04d}", epoch)
            for old in sorted(ckpts.glob("epoch-*"))[:-3]:
                shutil.rmtree(old)
    with torch.no_grad():
        test_accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    if save:
        import onnx

        save_file(dict(model.state_dict()), out / "model.safetensors")
        torch.onnx.export(
            model, (torch.zeros(2, 1, 8, 8),), str(out / "model.onnx"), dynamo=False,
            input_names=["x"], output_names=["fc2"], opset_version=17,
            dynamic_axes={"x": {0: "batch"}, "fc2": {0: "batch"}},
        )
        onnx.checker.check_model(str(out / "model.onnx"), full_check=True)
    (out / "metrics.json").write_text(json.dumps({"test/accuracy": test_accuracy}))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one process run to its end (`python -m` imports from cwd)."""
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr.decode()[-2000:]}")
    return elapsed, _children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--threads", type=int, default=1, help="OMP/MKL threads; 0 leaves them alone")
    parser.add_argument("--no-bare", action="store_true", help="skip the script without saving")
    parser.add_argument("--compare", metavar="DIR", type=Path,
                        help="also time `python -m engine train` of another checkout (e.g. the "
                             "previous commit: git archive HEAD | tar -x -C DIR)")
    parser.add_argument("--by-hand", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--bare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.by_hand:
        by_hand(Path(args.by_hand), args.epochs, save=not args.bare)
        return

    env = dict(os.environ)
    if args.threads:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(args.threads)
    py = sys.executable
    times: dict[str, list[float]] = {"engine": [], "script": [], "bare": [], "other": []}
    cpu: dict[str, list[float]] = {"engine": [], "script": [], "bare": [], "other": []}
    with tempfile.TemporaryDirectory(prefix="train-process-") as tmp:
        def command(kind: str, r: int) -> list[str]:
            out = Path(tmp) / f"{kind}-{r}"
            if kind in ("engine", "other"):
                return [py, "-m", "engine", "train", str(SPEC), "--data", "digits",
                        "--epochs", str(args.epochs), "--out", str(out), "--quiet"]
            out.mkdir()
            extra = ["--bare"] if kind == "bare" else []
            return [py, str(Path(__file__).resolve()), "--by-hand", str(out),
                    "--epochs", str(args.epochs), *extra]

        kinds = ["engine", "script"] + ([] if args.no_bare else ["bare"])
        kinds += ["other"] if args.compare else []
        # One of each first, unrecorded: the page cache then holds every file both import.
        for kind in kinds:
            _timed(command(kind, -1), env, args.compare if kind == "other" else ROOT)
        for r in range(args.repeats):
            order = kinds if r % 2 == 0 else kinds[::-1]
            for kind in order:
                wall, used = _timed(command(kind, r), env, args.compare if kind == "other" else ROOT)
                times[kind].append(wall)
                cpu[kind].append(used)

    med = {k: statistics.median(v) for k, v in times.items() if v}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items() if v}
    ratios = [e / s for e, s in zip(times["engine"], times["script"], strict=True)]
    print(f"python {sys.version.split()[0]}, OMP threads {args.threads or 'default'}, digits MLP, "
          f"{args.epochs} epochs, {args.repeats} alternated runs of each (median seconds)\n")
    print("| process | wall s | min..max | CPU s |")
    print("|---|---:|---:|---:|")
    labels = {"engine": "`python -m engine train` (checkpoints, export + ONNX)",
              "script": "hand-written script (checkpoints, safetensors + ONNX)",
              "bare": "hand-written script, no checkpoints or ONNX",
              "other": f"`python -m engine train` of {args.compare}"}
    for kind in kinds:
        print(f"| {labels[kind]} | {med[kind]:.2f} | {min(times[kind]):.2f}..{max(times[kind]):.2f} "
              f"| {med_cpu[kind]:.2f} |")
    print(f"\nengine / script, wall (ratio of medians): {med['engine'] / med['script']:.3f}  "
          f"(median of per-round ratios {statistics.median(ratios):.3f}, "
          f"{min(ratios):.3f}..{max(ratios):.3f}); CPU: {med_cpu['engine'] / med_cpu['script']:.3f}")
    if "bare" in med:
        print(f"engine / bare, wall: {med['engine'] / med['bare']:.3f}, "
              f"CPU: {med_cpu['engine'] / med_cpu['bare']:.3f}; script / bare (what saving costs "
              f"the script), wall: {med['script'] / med['bare']:.3f}")
    if "other" in med:
        print(f"{args.compare} / script, wall: {med['other'] / med['script']:.3f}, CPU: "
              f"{med_cpu['other'] / med_cpu['script']:.3f}" + (
                  f"; / bare, wall: {med['other'] / med['bare']:.3f}, CPU: "
                  f"{med_cpu['other'] / med_cpu['bare']:.3f}" if "bare" in med else ""))

if __name__ == "__main__":
    main()
