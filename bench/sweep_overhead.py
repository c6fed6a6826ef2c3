"""A sweep on the service against the same search in one plain process: the per-trial overhead.

The search: the iris MLP of examples/specs/iris_mlp.json, 12 trials of Optuna's TPE (seeded, no
pruner) over `optimizer.lr` (log-uniform 1e-4..0.1) and the width of `fc1` (8, 16, 32, 64), 20
epochs of batch 16 each, the objective the lowest val/loss.

- plain: a fresh `python bench/sweep_overhead.py --plain` (torch + Optuna, what a person writes:
  iris from scikit-learn once, a stratified 70/15/15 split, standardised features, a plain
  training loop with a validation pass per epoch); its time is the search's, imports left out
  (the service's workers have theirs done too). torch gets the training worker's thread count.
- service: a real stack (tests/stack/stack.py with bench/stack/settings.py: no step delay, a
  training worker and a short-queue worker as under `make run`, both plain Celery workers); the
  graph is created through REST, then the time from `POST /api/sweeps/` to the sweep's end as
  `GET /api/sweeps/<id>/` (polled every 50 ms) shows it.

The machine is shared, so the two alternate `--repeats` times (plain first on even rounds) and
the medians are reported: service / plain, and the per-trial overhead (service - plain) / trials.
Results go to bench/results.json under "sweep_overhead" and the table in docs/benchmarks.md.

    .venv/bin/python bench/sweep_overhead.py [--repeats 3] [--no-docs] [--profile DIR]

`--profile DIR` runs the service's training worker under cProfile (NETLOOM_BENCH_PROFILE, read by
bench/stack/sweep_settings.py only) and writes DIR/worker.pstats when the stack stops.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results.json"
DOCS = ROOT / "docs" / "benchmarks.md"
SPEC = ROOT / "examples" / "specs" / "iris_mlp.json"
START, END = "<!-- sweep_overhead:start -->", "<!-- sweep_overhead:end -->"

TRIALS, EPOCHS, BATCH, SEED = 12, 20, 16, 7
LR = (1e-4, 0.1)
WIDTHS = [8, 16, 32, 64]


def plain(threads: int) -> None:
    """The search in this process, as a person writes it; prints {"seconds", "best"} as JSON."""
    import numpy as np
    import optuna
    import torch
    import torch.nn.functional as F
    from sklearn.datasets import load_iris
    from sklearn.model_selection import train_test_split
    from torch import nn

    torch.set_num_threads(threads)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    started = time.perf_counter()
    iris = load_iris()
    x_all, y_all = iris.data.astype(np.float32), iris.target.astype(np.int64)
    idx = np.arange(len(y_all))
    rest, _test = train_test_split(idx, test_size=0.15, stratify=y_all, random_state=0)
    train_idx, val_idx = train_test_split(rest, test_size=0.15 / 0.85, stratify=y_all[rest], random_state=0)
    mean, std = x_all[train_idx].mean(0), x_all[train_idx].std(0)
    x = torch.from_numpy((x_all - mean) / std)
    y = torch.from_numpy(y_all)
    x_train, y_train, x_val, y_val = x[train_idx], y[train_idx], x[val_idx], y[val_idx]

    def objective(trial: optuna.Trial) -> float:
        lr = trial.suggest_float("optimizer.lr", *LR, log=True)
        width = trial.suggest_categorical("nodes.fc1.out_features", WIDTHS)
        torch.manual_seed(SEED)
        model = nn.Sequential(nn.Linear(4, width), nn.GELU(), nn.Linear(width, 16), nn.GELU(), nn.Linear(16, 3))
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        best = float("inf")
        for _epoch in range(EPOCHS):
            model.train()
            order = torch.randperm(len(x_train))
            for i in range(0, len(order), BATCH):
                batch = order[i : i + BATCH]
                loss = F.cross_entropy(model(x_train[batch]), y_train[batch])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            model.eval()
            with torch.no_grad():
                best = min(best, F.cross_entropy(model(x_val), y_val).item())
        return best

    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=SEED))
    study.optimize(objective, n_trials=TRIALS)
    print(json.dumps({"seconds": time.perf_counter() - started, "best": study.best_value}))


def run_plain(threads: int) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    out = subprocess.run([sys.executable, __file__, "--plain", str(threads)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600, check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])


def sweep_body(stack: Any, graph: int) -> dict[str, Any]:
    return {
        "name": "iris overhead", "graph": graph, "revision": 1, "dataset": stack.world["a"]["dataset"],
        "config": {"epochs": EPOCHS, "batch_size": BATCH, "device": "cpu", "seed": SEED},
        "space": {"optimizer.lr": {"type": "float", "low": LR[0], "high": LR[1], "log": True},
                  "nodes.fc1.out_features": {"type": "categorical", "choices": WIDTHS}},
        "strategy": "tpe", "pruner": "none", "objective": {"metric": "val/loss", "mode": "min"},
        "budget": TRIALS, "parallelism": 1, "seed": SEED,
    }


def run_service(stack: Any, graph: int) -> float:
    api = stack.api("a")
    started = time.perf_counter()
    created = api.post("/api/sweeps/", json=sweep_body(stack, graph))
    assert created.status_code == 201, created.text
    sweep_id = created.json()["id"]
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        sweep = api.get(f"/api/sweeps/{sweep_id}/").json()
        if sweep["status"] != "running":
            break
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    assert sweep["status"] == "succeeded", (sweep, stack.logs())
    assert sum(t["state"] == "complete" for t in sweep["trials"]) == TRIALS, sweep["trials"]
    return seconds


def write_docs(result: dict[str, Any], command: str) -> None:
    rows = [f"| {r + 1} | {p:.2f} | {s:.2f} | {s / p:.1f}x |" for r, (p, s) in
            enumerate(zip(result["plain_s"], result["service_s"], strict=True))]
    lines = [
        START,
        f"`{command}` ({result['trials']} trials x {result['epochs']} epochs, alternated "
        f"{len(rows)} times on a machine shared with other work; medians in bold):",
        "",
        "| round | plain process (s) | service (s) | service / plain |",
        "|---|---|---|---|",
        *rows,
        f"| **median** | **{result['plain_median_s']:.2f}** | **{result['service_median_s']:.2f}** | "
        f"**{result['ratio']:.2f}x** |",
        "",
        f"Per-trial overhead (service - plain) / {result['trials']}: **{result['per_trial_overhead_s']:.3f} s** "
        "(target: at most 0.25 s, service / plain at most 2.5).",
        END,
    ]
    text = DOCS.read_text()
    if START in text:
        text = text[: text.index(START)] + "\n".join(lines) + text[text.index(END) + len(END):]
    else:
        text += ("\n## Sweep overhead: the service against one plain process\n\nbench/sweep_overhead.py: "
                 + __doc__.split("\n\n")[0] + "\n\n" + "\n".join(lines) + "\n")
    DOCS.write_text(text)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--plain":
        plain(int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--profile", type=Path, default=None)
    args = parser.parse_args()

    from tests.stack.stack import RedisServer, ServiceStack

    env = {"DJANGO_SETTINGS_MODULE": "bench.stack.sweep_settings", "NETLOOM_WEB_LOG_LEVEL": "warning"}
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
        env["NETLOOM_BENCH_PROFILE"] = str(args.profile.resolve() / "worker.pstats")
    plain_s: list[float] = []
    service_s: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, \
            ServiceStack(Path(tmp), RedisServer.shared(db=6), env=env, split_workers=True) as stack:
        threads = int(stack.env["NETLOOM_WORKER_THREADS"])
        spec = json.loads(SPEC.read_text())
        created = stack.api("a").post("/api/graphs/", json={"team": stack.world["a"]["team"], "name": "iris mlp",
                                                            "spec": spec})
        assert created.status_code == 201, created.text
        graph = created.json()["id"]
        run_service(stack, graph)  # warm: the worker's first imports, the dataset's first build
        for round_ in range(args.repeats):
            for which in (("plain", "service") if round_ % 2 == 0 else ("service", "plain")):
                if which == "plain":
                    plain_s.append(run_plain(threads))
                else:
                    service_s.append(run_service(stack, graph))
                print(which, f"{(plain_s if which == 'plain' else service_s)[-1]:.2f}s", flush=True)
    p, s = statistics.median(plain_s), statistics.median(service_s)
    result = {"trials": TRIALS, "epochs": EPOCHS, "batch_size": BATCH, "threads": threads,
              "plain_s": [round(v, 3) for v in plain_s], "service_s": [round(v, 3) for v in service_s],
              "plain_median_s": round(p, 3), "service_median_s": round(s, 3), "ratio": round(s / p, 2),
              "per_trial_overhead_s": round((s - p) / TRIALS, 3)}
    print(json.dumps(result, indent=1))
    if args.no_docs:
        return
    command = "python bench/sweep_overhead.py " + " ".join(sys.argv[1:])
    stored = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    stored["sweep_overhead"] = {"command": command.strip(), **result}
    RESULTS.write_text(json.dumps(stored, indent=2) + "\n")
    write_docs(result, command.strip())


if __name__ == "__main__":
    main()
