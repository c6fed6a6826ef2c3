"""A sweep walked against a running service: are all its per-epoch reports kept?

    python scripts/sweep_walk.py [--url http://127.0.0.1:8000] [--trials 24] [--epochs 20] [--parallelism 3]

Signs in as demo / demo (`make run`'s login), adds built-in iris and a small MLP, starts a TPE
sweep with median pruning over the learning rate and the hidden width, waits for it to end, and
checks every trial: a complete trial reported every epoch (1..epochs), a pruned one every epoch up
to the one it was pruned at, a failed one says why. Prints one line per trial state and exits 1
when any report is missing. docs/reliability.md "SQLite" has the figure.
"""

from __future__ import annotations

import argparse
import sys
import time

from netloom.client import Client

SPEC = {
    "version": 1,
    "inputs": [{"id": "x", "shape": [4], "dtype": "float32"}],
    "nodes": [
        {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
        {"id": "act", "op": "ReLU", "inputs": ["fc1"]},
        {"id": "fc2", "op": "Linear", "params": {"out_features": 3}, "inputs": ["act"]},
    ],
    "outputs": ["fc2"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--parallelism", type=int, default=3)
    args = parser.parse_args()

    client, _ = Client.login(args.url, "demo", "demo", name="sweep walk")
    dataset = client.dataset_add_builtin("iris", name="iris (sweep walk)")
    graph = client.graph_push(SPEC, name="sweep walk MLP")
    started = time.monotonic()
    sweep = client.sweep_create(
        name="sweep walk", graph=graph["id"], dataset=dataset["id"],
        config={"epochs": args.epochs, "batch_size": 16, "device": "cpu"},
        space={"optimizer.lr": {"type": "float", "low": 1e-4, "high": 0.3, "log": True},
               "nodes.fc1.out_features": {"type": "categorical", "choices": [8, 16, 32]}},
        strategy="tpe", pruner="median", objective={"metric": "val/loss", "mode": "min"},
        budget=args.trials, parallelism=args.parallelism, seed=7,
    )
    while sweep["status"] == "running":
        time.sleep(2)
        sweep = client.sweep(sweep["id"])
    holes: list[str] = []
    states: dict[str, int] = {}
    reports = 0
    for trial in sweep["trials"]:
        states[trial["state"]] = states.get(trial["state"], 0) + 1
        epochs = [epoch for epoch, _ in trial["intermediate"]]
        reports += len(epochs)
        if trial["state"] == "failed":
            holes.append(f"trial {trial['number']} failed: {trial['reason']}")
            continue
        last = args.epochs if trial["state"] == "complete" else max(epochs, default=0)
        if epochs != list(range(1, last + 1)):
            missing = sorted(set(range(1, last + 1)) - set(epochs))
            holes.append(f"trial {trial['number']} ({trial['state']}): epochs {missing} missing")
    print(f"sweep {sweep['id']} {sweep['status']} in {time.monotonic() - started:.0f} s: "
          f"{len(sweep['trials'])} trials {states}, {reports} epoch reports, {len(holes)} trials with holes")
    for line in holes:
        print("  " + line)
    return 1 if holes else 0


if __name__ == "__main__":
    sys.exit(main())
