"""Co-editing: edit-to-other-screens latency with N editors on one graph (pycrdt clients).

Starts the real stack (tests/stack/stack.py: a SQLite file, the machine's Redis with a prefix of
its own, the web tier of webapp/serve.py with `make run`'s two server processes; the worker is
stopped, nothing trains), creates a graph, and connects N editors (tests/collab_support/ws.py: a
pycrdt document speaking y-protocols over a real WebSocket, as y-websocket does) to its room. Each
editor places a node of its own, then for `--seconds` changes one of its node's parameters at
random moments (`--rate` edits a second each, Poisson) and, with `--cursor-hz`, moves its cursor
over awareness that often. Latency of an edit = the moment each other editor has applied it -
the moment its author made the local change (one process, one clock). Every edit must reach all
N-1 others: not received ones are counted.

    .venv/bin/python bench/collab_latency.py [--editors 20] [--seconds 20] [--rate 1]
        [--cursor-hz 0,5] [--web-workers 2] [--json out.json] [--no-docs]

Writes the table between the collab-latency markers of docs/benchmarks.md (with the command).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DOCS = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- collab-latency:start -->", "<!-- collab-latency:end -->"
SETTLE_SECONDS = 3.0
TARGET_P95_MS = 100.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


async def measure(url: str, token: str, *, editors: int, seconds: float, rate: float, cursor_hz: float) -> dict[str, Any]:
    from tests.collab_support.ws import Editor

    people = [Editor(url, token, f"e{i}") for i in range(editors)]
    sent: dict[tuple[int, int], float] = {}
    got: dict[tuple[int, int], list[float]] = {}
    own: list[str] = []
    seen = [[0] * editors for _ in range(editors)]  # seen[receiver][author]: the last seq applied

    author_of: dict[str, int] = {}

    def watch(receiver: Any) -> None:
        """Record, as the receiver's document applies them, the edits of the others' nodes."""
        r = receiver.index

        def changed(events: Any) -> None:
            now = time.perf_counter()
            for event in events:
                path = event.path
                if len(path) != 2 or path[1] != "params" or "seq" not in event.keys:
                    continue
                a = author_of.get(path[0])
                if a is None or a == r:
                    continue
                seq = int(event.keys["seq"]["newValue"])
                for k in range(seen[r][a] + 1, seq + 1):
                    got.setdefault((a, k), []).append(now)
                seen[r][a] = max(seen[r][a], seq)

        receiver.subscription = receiver.client.roots["nodes"].observe_deep(changed)

    for i, person in enumerate(people):
        person.index = i  # type: ignore[attr-defined]
        await person.__aenter__()
    try:
        for person in people:
            await person.synced()
        for person in people:
            own.append(await person.add_node("Identity", {"seq": 0}, source="fc2", x=50 * len(own), y=500))
        for person in people:
            await person.until(lambda p=person: all(n in p.client.roots["nodes"] for n in own), timeout=60)
        for a, node_id in enumerate(own):
            author_of[node_id] = a
        for person in people:
            watch(person)

        loop = asyncio.get_running_loop()
        stop_at = loop.time() + seconds

        async def edit(i: int) -> None:
            person, seq = people[i], 0
            while True:
                await asyncio.sleep(random.expovariate(rate))
                if loop.time() >= stop_at:
                    return
                seq += 1
                sent[(i, seq)] = time.perf_counter()
                await person.set_param(own[i], "seq", seq)

        async def cursor(i: int) -> None:
            person = people[i]
            while loop.time() < stop_at:
                await asyncio.sleep(1 / cursor_hz)
                await person.client.set_presence({"user": {"id": i, "username": person.name, "color": "#888"},
                                                  "cursor": {"x": random.random() * 800, "y": random.random() * 600}})

        tasks = [edit(i) for i in range(editors)]
        if cursor_hz > 0:
            tasks += [cursor(i) for i in range(editors)]
        await asyncio.gather(*tasks)
        await asyncio.sleep(SETTLE_SECONDS)
    finally:
        for person in people:
            await person.__aexit__(None, None, None)
    latencies = [(t - sent[key]) * 1000 for key, times in got.items() if key in sent for t in times]
    expected = len(sent) * (editors - 1)
    return {
        "editors": editors, "seconds": seconds, "rate": rate, "cursor_hz": cursor_hz,
        "edits": len(sent), "deliveries": len(latencies), "not_received": expected - len(latencies),
        "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
        "p95_ms": round(percentile(latencies, 95), 1), "p99_ms": round(percentile(latencies, 99), 1),
        "max_ms": round(max(latencies), 1) if latencies else None,
    }


def write_docs(rows: list[dict[str, Any]], command: str, web_workers: int) -> None:
    lines = [START, "", f"`{command}` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores shared with other "
             f"work, SQLite, the Redis pub/sub layer, {web_workers} server processes as `make run`; the editors "
             "in one client process on the same machine)", "",
             "| editors | edits/s each | cursor moves/s each | edits | deliveries | not received | p50 ms | p95 ms "
             "| p99 ms | max ms |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['editors']} | {r['rate']:g} | {r['cursor_hz']:g} | {r['edits']} | {r['deliveries']} | "
                     f"{r['not_received']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | {r['max_ms']} |")
    lines += ["", f"Target: p95 at most {TARGET_P95_MS:g} ms.", "", END]
    text = DOCS.read_text()
    if START in text:
        text = text[: text.index(START)] + "\n".join(lines) + text[text.index(END) + len(END):]
    else:
        text += ("\n## Co-editing latency\n\nbench/collab_latency.py: " + __doc__.split("\n\n")[1].replace("\n", " ")
                 + "\n\n" + "\n".join(lines) + "\n")
    DOCS.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--editors", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=1.0, help="edits per second per editor")
    parser.add_argument("--cursor-hz", default="0,5", help="cursor moves per second per editor, one row each")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()

    from tests.stack.stack import RedisServer, ServiceStack

    tmp = Path(tempfile.mkdtemp(prefix="netloom-collab-"))
    env = {"DJANGO_SETTINGS_MODULE": "bench.stack.settings", "NETLOOM_WEB_LOG_LEVEL": "warning"}
    rows: list[dict[str, Any]] = []
    with ServiceStack(tmp, RedisServer.shared(db=6), env=env) as stack:
        stack.stop_worker()
        stack.start_web({"NETLOOM_WEB_WORKERS": str(args.web_workers), "NETLOOM_WEB_LOG_LEVEL": "warning"})
        time.sleep(1.0 + args.web_workers)
        for cursor_hz in (float(c) for c in args.cursor_hz.split(",")):
            made = stack.api("a").post("/api/graphs/", json={
                "team": stack.world["a"]["team"], "name": f"collab bench {cursor_hz}", "spec": SPEC})
            assert made.status_code == 201, made.text
            url = f"ws://127.0.0.1:{stack.port}/ws/graphs/{made.json()['id']}/collab"
            row = asyncio.run(measure(url, stack.token("a"), editors=args.editors, seconds=args.seconds,
                                      rate=args.rate, cursor_hz=cursor_hz))
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"bench": "collab_latency", "rows": rows}, indent=2))
    if not args.no_docs:
        command = "python bench/collab_latency.py " + " ".join(a for a in sys.argv[1:] if a != "--no-docs")
        write_docs(rows, command.strip(), args.web_workers)


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

if __name__ == "__main__":
    main()
