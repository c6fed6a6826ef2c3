"""`netloom runs reproduce` and `netloom runs lineage`: repeat a run; where it came from and what came of it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def lineage_text(answer: dict[str, Any]) -> list[str]:
    """The lineage as lines: each node once, then `source -> target (kind)` for each edge."""
    nodes = {node["id"]: node for node in answer["nodes"]}

    def name(node_id: str) -> str:
        node = nodes[node_id]
        data = node["data"]
        if node["kind"] == "run":
            return f"run {data['run']} {node['label']!r} (rev {data['revision']}, seed {data['seed']}, {data['status']})"
        if node["kind"] == "dataset":
            digest = f" sha256 {data['digest'][:12]}" if data.get("digest") else ""
            return f"dataset {data['dataset']} {node['label']!r}{digest}"
        if node["kind"] == "checkpoint":
            return f"checkpoint {node['label']} of run {data['run']}" + ("" if data.get("available") else " (pruned)")
        if node["kind"] == "model_version":
            return f"model {data['model_name']} v{data['number']}"
        return f"alias {node['label']} of model {data['model_name']}"

    lines = [f"{name(node_id)}" + ("  <- this" if node_id == answer["root"] else "") for node_id in nodes]
    lines += [f"  {name(e['source'])} -> {name(e['target'])} ({e['kind']})" for e in answer["edges"]]
    if answer.get("truncated"):
        lines.append("(cut at the node limit: ask with a smaller --depth)")
    return lines


def add_lineage_commands(runs: Any, add: Callable[..., argparse.ArgumentParser], client: Callable[[Any], Any]) -> None:
    """`runs reproduce` and `runs lineage` (`client(args)` opens a logged-in Client)."""
    from netloom.cli.common import EXIT_OK

    def cmd_reproduce(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            run = c.reproduce(args.id, deterministic=True if args.deterministic else None)
        out.result(run, f"run {run['id']} {run['name']!r} queued, reproducing run {args.id}")
        return EXIT_OK

    def cmd_lineage(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            answer = c.lineage(args.id, depth=args.depth)
        out.result(answer, lineage_text(answer))
        return EXIT_OK

    reproduce = add(runs, "reproduce", cmd_reproduce,
                    "queue a run repeating one: same graph revision, data, config, seed and initialisation")
    reproduce.add_argument("id", type=int)
    reproduce.add_argument("--deterministic", action="store_true",
                           help="deterministic kernels only (matters on CUDA; CPU runs repeat bit for bit anyway)")
    lineage = add(runs, "lineage", cmd_lineage, "a run's dataset, source runs, checkpoints, fine-tunes and models")
    lineage.add_argument("id", type=int)
    lineage.add_argument("--depth", type=int, help="hops between runs each way (default 3)")
