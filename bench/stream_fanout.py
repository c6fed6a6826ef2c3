"""Live-stream fan-out: publish-to-receipt latency and loss/duplicates with N watchers.

Starts the real stack (tests/stack/stack.py: a SQLite file, the machine's Redis with a prefix of
its own, the ASGI server through webapp/serve.py; the worker is stopped so the runs stay put) and
creates R runs. This process then plays the training workers: every run emits `--rate` metric
events a second, stored through `events_record` every 0.2 s and published through `events_publish`
at most `--publish-hz` times a second with all its new events (the recorder's cadence:
RUNS_FLUSH_SECONDS 0.2, RUNS_PUBLISH_PER_SECOND 4). N WebSocket clients (token auth, spread evenly
over the runs and over `--client-procs` processes so the load generator is not the bottleneck)
connect with `?since=<the run's seq>` and record when each event arrives. Latency of an event =
receipt time - the time its group message was handed to `events_publish` (one clock: loopback).
Every client's sequence numbers are checked: each event after its `since` exactly once.

Each configuration runs side by side in one invocation (the same stack, the server restarted
between them), by default: per-event frames on 1 server process (the plain protocol),
batch frames on 1 process, batch frames on 2 processes; each at every `--watchers` count.

    .venv/bin/python bench/stream_fanout.py [--watchers 100,500] [--seconds 15] [--runs 10]
        [--rate 10] [--publish-hz 4] [--configs event:1,batch:1,batch:2] [--json out.json]

Bounded: at most `--seconds` of publishing per measurement, clients give up after a deadline.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SETTLE_SECONDS = 2.0  # after the last publish, before the clients stop listening


# --- the clients (their own processes) -------------------------------------------------------------


async def _watch(url: str, token: str, stop_at: list[float], connected: asyncio.Event) -> dict[str, Any]:
    from websockets.asyncio.client import connect

    got: list[tuple[int, float]] = []
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}, max_size=None,
                       open_timeout=120, ping_interval=None) as ws:
        while True:
            frame = json.loads(await ws.recv())
            if frame["type"] == "replayed":
                break
        connected.set()
        while True:
            left = stop_at[0] - time.time()
            if left <= 0:
                break
            try:  # re-read the deadline at least twice a second (it is moved when publishing ends)
                text = await asyncio.wait_for(ws.recv(), min(left, 0.5))
            except TimeoutError:
                continue
            now = time.time()
            frame = json.loads(text)
            events = frame["events"] if frame["type"] == "batch" else [frame]
            got.extend((int(e["seq"]), now) for e in events if "seq" in e and "run" in e)
    return {"got": got}


async def _clients(plan: list[dict[str, Any]], token: str, ready: Any, go: Any, stop_file: str) -> list[dict[str, Any]]:
    stop_at = [time.time() + 3600.0]
    gate = asyncio.Semaphore(8)  # connect a few at a time: the server checks access for each
    flags = [asyncio.Event() for _ in plan]

    async def one(item: dict[str, Any], connected: asyncio.Event) -> dict[str, Any]:
        async with gate:
            task = asyncio.ensure_future(_watch(item["url"], token, stop_at, connected))
            waiter = asyncio.ensure_future(connected.wait())
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
        return {**item, **(await task)}

    tasks = [asyncio.ensure_future(one(item, flag)) for item, flag in zip(plan, flags, strict=True)]
    while not all(flag.is_set() for flag in flags):
        failed = [t for t in tasks if t.done() and t.exception()]
        if failed:
            raise RuntimeError(f"a client failed to connect: {failed[0].exception()!r}")
        await asyncio.sleep(0.05)
    ready.set()
    while not Path(stop_file).exists():
        await asyncio.sleep(0.1)
    stop_at[0] = float(Path(stop_file).read_text())
    return await asyncio.gather(*tasks)


def client_process(plan: list[dict[str, Any]], token: str, ready: Any, go: Any, stop_file: str, out: str) -> None:
    """Entry point of one client process: connect its clients, listen until told, write the result."""
    try:
        results = asyncio.run(_clients(plan, token, ready, go, stop_file))
    except BaseException as exc:
        import traceback

        Path(out + ".error").write_text(traceback.format_exc())
        raise SystemExit(f"client process failed: {exc!r}") from None
    Path(out).write_text(json.dumps(results))


# --- the publisher and the measurement (this process) ------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100), nearest rank."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def publish_for(run_ids: list[int], seconds: float, rate: float, publish_hz: float) -> dict[tuple[int, int], float]:
    """Emit `rate` metric events/s per run for `seconds`: stored every 0.2 s, published `publish_hz`/s."""
    from webapp.runs.stream.events import events_publish, events_record

    sent: dict[tuple[int, int], float] = {}
    unpublished: dict[int, list[dict[str, Any]]] = {run: [] for run in run_ids}
    step = {run: 0 for run in run_ids}
    start = time.monotonic()
    flush_every, publish_every = 0.2, 1.0 / publish_hz
    next_flush = next_publish = start
    while time.monotonic() - start < seconds:
        now = time.monotonic()
        if now >= next_flush:
            due = int((now - start) * rate) + 1
            for run in run_ids:
                events = []
                while step[run] < due:
                    step[run] += 1
                    events.append({"type": "metric", "step": step[run], "epoch": step[run] / 100,
                                   "values": {"train/loss": 1.0 / step[run]}})
                unpublished[run] += events_record(run_id=run, events=events)
            next_flush += flush_every
        if now >= next_publish:
            for run in run_ids:
                if unpublished[run]:
                    t = time.time()
                    for event in unpublished[run]:
                        sent[(run, event["seq"])] = t
                    events_publish(run_id=run, events=unpublished[run])
                    unpublished[run] = []
            next_publish += publish_every
        time.sleep(max(0.0, min(next_flush, next_publish) - time.monotonic()))
    for run in run_ids:  # the last few
        if unpublished[run]:
            t = time.time()
            for event in unpublished[run]:
                sent[(run, event["seq"])] = t
            events_publish(run_id=run, events=unpublished[run])
    return sent


def measure(stack: Any, run_ids: list[int], *, watchers: int, batch: bool, seconds: float, rate: float,
            publish_hz: float, client_procs: int) -> dict[str, Any]:
    """One measurement: `watchers` clients over the runs, `seconds` of publishing."""
    from webapp.runs.models import Run

    since = dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "event_seq"))
    plan = []
    for i in range(watchers):
        run = run_ids[i % len(run_ids)]
        url = stack.ws_url(run, since[run]) + ("&batch=1" if batch else "")
        plan.append({"run": run, "since": since[run], "url": url})
    work = Path(tempfile.mkdtemp(prefix="fanout-", dir=stack.tmp))
    stop_file = str(work / "stop")
    ctx = mp.get_context("spawn")
    procs, readies = [], []
    for p in range(client_procs):
        ready = ctx.Event()
        proc = ctx.Process(target=client_process, args=(plan[p::client_procs], stack.token("a"), ready, None,
                                                        stop_file, str(work / f"clients-{p}.json")))
        proc.start()
        procs.append(proc)
        readies.append(ready)
    connect_started = time.monotonic()
    for ready, proc in zip(readies, procs, strict=True):
        while not ready.wait(0.5):
            if not proc.is_alive() or time.monotonic() - connect_started > 300:
                raise RuntimeError(f"clients did not connect\n{stack.logs()}")
    connect_seconds = time.monotonic() - connect_started
    sent = publish_for(run_ids, seconds, rate, publish_hz)
    tmp_stop = stop_file + ".tmp"
    Path(tmp_stop).write_text(str(time.time() + SETTLE_SECONDS))
    os.replace(tmp_stop, stop_file)
    for proc in procs:
        proc.join(SETTLE_SECONDS + 120)
        if proc.is_alive():
            proc.kill()
    final = dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "event_seq"))
    latencies: list[float] = []
    lost = dups = clients_with_loss = clients_with_dup = 0
    for p in range(client_procs):
        for client in json.loads((work / f"clients-{p}.json").read_text()):
            seqs = [seq for seq, _ in client["got"]]
            expected = set(range(client["since"] + 1, final[client["run"]] + 1))
            missing = len(expected - set(seqs))
            repeated = len(seqs) - len(set(seqs))
            lost += missing
            dups += repeated
            clients_with_loss += bool(missing)
            clients_with_dup += bool(repeated)
            latencies += [(t - sent[(client["run"], seq)]) * 1000 for seq, t in client["got"]
                          if (client["run"], seq) in sent]
    return {
        "watchers": watchers, "frames": "batch" if batch else "event", "events_published": len(sent),
        "deliveries": len(latencies), "p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95),
        "p99_ms": percentile(latencies, 99), "max_ms": max(latencies, default=float("nan")),
        "mean_ms": statistics.fmean(latencies) if latencies else float("nan"),
        "lost": lost, "duplicates": dups, "clients_with_loss": clients_with_loss,
        "clients_with_duplicates": clients_with_dup, "connect_seconds": round(connect_seconds, 1),
    }


def use_layer(layer: str) -> None:
    """This process's channel layer: the server's (NETLOOM_CHANNEL_LAYER "redis" or "redis-pubsub")."""
    from channels.layers import channel_layers
    from django.conf import settings

    config = settings.CHANNEL_LAYERS["default"]["CONFIG"]
    if layer == "pubsub":
        backend = {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
                   "CONFIG": {"hosts": config["hosts"], "prefix": config["prefix"]}}
    else:
        backend = {"BACKEND": "channels_redis.core.RedisChannelLayer",
                   "CONFIG": {"hosts": config["hosts"], "prefix": config["prefix"], "capacity": 1000, "expiry": 30}}
    settings.CHANNEL_LAYERS = {"default": backend}
    channel_layers.backends.clear()


def restart_web(stack: Any, workers: int, layer: str = "core") -> None:
    """Start the stack's web server again with `workers` processes and that layer."""
    stack.start_web({"NETLOOM_WEB_WORKERS": str(workers), "NETLOOM_WEB_LOG_LEVEL": "warning",
                     "NETLOOM_CHANNEL_LAYER": "redis-pubsub" if layer == "pubsub" else "redis"})
    time.sleep(1.0 + workers)  # every process has imported Django and listens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watchers", default="100,500")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rate", type=float, default=10.0, help="metric events per second per run")
    parser.add_argument("--publish-hz", type=float, default=4.0, help="group messages per second per run")
    parser.add_argument("--configs", default="event:1,batch:1,batch:2,batch:1:pubsub,batch:2:pubsub",
                        help="frames:server processes[:pubsub], ...")
    parser.add_argument("--client-procs", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from tests.stack.stack import RedisServer, ServiceStack

    tmp = Path(tempfile.mkdtemp(prefix="netloom-fanout-"))
    env = {"DJANGO_SETTINGS_MODULE": "bench.stack.settings", "NETLOOM_WEB_LOG_LEVEL": "warning"}
    rows: list[dict[str, Any]] = []
    with ServiceStack(tmp, RedisServer.shared(db=6), env=env) as stack:
        stack.stop_worker()  # the runs stay queued: this process plays the workers
        os.environ.update({k: v for k, v in stack.env.items() if k.startswith(("NETLOOM_", "DJANGO_"))})
        import django

        django.setup()
        run_ids = [stack.create_run(epochs=1)["id"] for _ in range(args.runs)]
        for config in args.configs.split(","):
            frames, workers, *rest = config.split(":")
            layer = rest[0] if rest else "core"
            restart_web(stack, int(workers), layer)
            use_layer(layer)
            for watchers in (int(w) for w in args.watchers.split(",")):
                row = {"config": config, "server_processes": int(workers), "layer": layer, **measure(
                    stack, run_ids, watchers=watchers, batch=frames == "batch", seconds=args.seconds,
                    rate=args.rate, publish_hz=args.publish_hz, client_procs=args.client_procs)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    print()
    print("| frames | layer | server processes | watchers | p50 ms | p95 ms | p99 ms | max ms | deliveries "
          "| not received | repeated |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['frames']} | {r['layer']} | {r['server_processes']} | {r['watchers']} | {r['p50_ms']:.1f} | "
              f"{r['p95_ms']:.1f} | "
              f"{r['p99_ms']:.1f} | {r['max_ms']:.0f} | {r['deliveries']} | {r['lost']} | {r['duplicates']} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"bench": "stream_fanout", "args": vars(args) | {"json": str(args.json)},
                                         "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
