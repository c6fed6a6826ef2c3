"""`GET /api/runs/<id>/` under load, alone and with a run training beside it .

Starts the real stack (tests/stack/stack.py with bench/stack/settings.py: a SQLite file, the
machine's Redis under a prefix of its own, the web tier through webapp/serve.py with
`--web-workers` processes, a training worker and a short-job worker) and measures, one after the
other in one invocation:

0. the baselines, the same load on bench-only answers: `raw`, a bare WSGI callable answering a
   constant body before Django is asked (bench/stack/wsgi.py, served by the front only:
   nginx, granian's glue and wrk on the same cores, the floor of any Python answer here),
   and two bench-only views (bench/stack/urls.py): `bare`, a
   plain Django view answering the same body (the web tier, the middleware and Django's handler:
   the ceiling of this machine for any Django view), and `token`, a DRF view with the service's
   token authentication and permission answering the same body;
   Both, and the run detail alone (1), are measured twice with the web tier restarted between:
   uvicorn serving HTTP itself (NETLOOM_WEB_FRONT=none: Django's WSGI handler on a2wsgi's thread
   pool) and the default, nginx in front of granian serving Django's
   WSGI handler (webapp/serve.py); needs nginx (`apt-get install nginx-light`);
1. load alone: wrk (Debian's; `apt-get install wrk`), `--connections` connections for `--seconds`
   on loopback, a token in the Authorization header: requests/s and the latency distribution;
2. training alone: a run of the iris MLP trains (no step delay) for `--seconds`; its speed is the
   steps it advanced per second (its `progress.step`, read at the start and the end);
3. both at once: the same wrk load while the same run goes on training; then, the run still
   training, the three baselines again (what any answer gets of the cores training leaves).

The ratios (3 vs 1 for requests/s, 3 vs 2 for training steps/s) say whether either starves the other;
1 against 0 says what the run detail costs over the ceiling; during 1 each web-tier process's and
wrk's CPU (cores, from /proc) is recorded, where the two cores went. `DATABASE_URL=postgres://...` runs the
stack on a PostgreSQL database of its own (created and dropped), as the test stacks do.

    .venv/bin/python bench/api_load.py [--seconds 30] [--connections 64] [--threads 2] [--web-workers 2]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}
# NETLOOM_WEB_FRONT values measured side by side, and their names in the table.
SERVERS = {"none": "uvicorn alone", "nginx": "nginx + granian (default)"}


def wrk(url: str, token: str, *, seconds: float, connections: int, threads: int,
        script: Path | None = None) -> dict[str, Any]:
    """Run wrk once (`script`: a Lua file, e.g. a POST body); requests/s, latency percentiles (ms), errors."""
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{int(seconds)}s", "--latency", "--timeout", "10s",
         "-H", f"Authorization: Bearer {token}", *(["-s", str(script)] if script else []), url],
        capture_output=True, text=True, timeout=seconds + 60, check=True,
    ).stdout
    result: dict[str, Any] = {"requests_per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))}
    for pct, value, unit in re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s)\s*$", out, re.M):
        result[f"p{pct}_ms"] = round(float(value) * _UNITS[unit], 2)
    total = re.search(r"(\d+) requests in", out)
    result["requests"] = int(total.group(1)) if total else None
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    result["non_2xx"] = int(bad.group(1)) if bad else 0
    result["socket_errors"] = errors.group(1) if errors else ""
    return result


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (0 once it has ended)."""
    from tests.stack.stack import proc_stat

    fields = proc_stat(pid)
    return (int(fields[11]) + int(fields[12])) / _TICKS if fields is not None else 0.0


def cpu_shares(stack: Any, measure: Any) -> tuple[Any, dict[str, float]]:
    """`measure()`'s result and the share of a core each web-tier process and wrk used meanwhile."""
    pids = stack.web_pids()
    names = {pid: " ".join(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:4])
             for pid in pids}
    before, children, start = {pid: cpu_seconds(pid) for pid in pids}, os.times(), time.monotonic()
    result = measure()
    took, after = time.monotonic() - start, os.times()
    shares: dict[str, float] = {}
    for pid in pids:
        label = "nginx" if "nginx" in names[pid] else "granian" if "granian" in names[pid] else \
            "uvicorn" if "--streams-uds" in names[pid] or "spawn" in names[pid] else names[pid][:40]
        share = (cpu_seconds(pid) - before[pid]) / took
        if share >= 0.005:
            shares[f"{label} {pid}"] = round(share, 3)
    shares["wrk"] = round((after.children_user + after.children_system
                           - children.children_user - children.children_system) / took, 3)
    return result, shares


def training_speed(stack: Any, run_id: int, seconds: float, load: Any = None) -> tuple[float, Any]:
    """Steps per second the run advances over `seconds` (while `load()` runs, when given)."""
    def step() -> int:
        return int(stack.api("a").get(f"/api/runs/{run_id}/").json()["progress"]["step"] or 0)

    first, start = step(), time.monotonic()
    loaded = load() if load is not None else time.sleep(seconds)
    last, took = step(), time.monotonic() - start
    return (last - first) / took, loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("needs wrk: apt-get install -y wrk")
    from webapp.serve import front_available

    if not front_available():
        raise SystemExit("needs nginx for the web tier's front: apt-get install -y nginx-light")

    from tests.stack.stack import RedisServer, ServiceStack
    from tests.stack.test_run_e2e import wait_status

    tmp = Path(tempfile.mkdtemp(prefix="netloom-api-load-"))
    env = {"DJANGO_SETTINGS_MODULE": "bench.stack.settings", "NETLOOM_WEB_LOG_LEVEL": "warning",
           "NETLOOM_WEB_WORKERS": str(args.web_workers),  # the stack's test default is one process
           "NETLOOM_WSGI_APP": "bench.stack.wsgi:application"}  # the raw baseline, then the service
    with ServiceStack(tmp, RedisServer.shared(db=6), env=env, split_workers=True) as stack:
        target = stack.create_run(epochs=1)
        wait_status(stack, target["id"], {"succeeded", "failed"})
        url = f"{stack.base}/api/runs/{target['id']}/"
        token = stack.token("a")
        probe = stack.api("a").get(f"/api/runs/{target['id']}/")
        assert probe.status_code == 200, probe.text

        def load(target_url: str = url) -> dict[str, Any]:
            return wrk(target_url, token, seconds=args.seconds, connections=args.connections, threads=args.threads)

        # uvicorn serving HTTP itself against the default, the front
        # (nginx, granian for HTTP): the same three requests, the web tier restarted, side by side.
        # The rest runs on the default.
        by_server: dict[str, dict[str, Any]] = {}
        for server in SERVERS:
            stack.start_web({"NETLOOM_WEB_WORKERS": str(args.web_workers), "NETLOOM_WEB_FRONT": server})
            time.sleep(1.0 + args.web_workers)  # every process has imported Django and listens
            wrk(url, token, seconds=3, connections=args.connections, threads=args.threads)  # warm: threads, connections
            phases = by_server[server] = {}
            for name in ("raw", "bare", "token") if server == "nginx" else ("bare", "token"):  # raw: WSGI only
                phases[name] = load(f"{stack.base}/bench/{name}/")
                print(json.dumps({"phase": f"{server}: baseline {name}", **phases[name]}), flush=True)
            phases["detail"], phases["detail_cpu_cores"] = cpu_shares(stack, load)
            print(json.dumps({"phase": f"{server}: load alone", **phases["detail"]}), flush=True)
            print(f"  CPU (cores) meanwhile: {phases['detail_cpu_cores']}", flush=True)
        baselines = by_server["nginx"]
        alone = baselines["detail"]
        training = stack.create_run(epochs=100_000)
        deadline = time.monotonic() + 120
        while stack.api("a").get(f"/api/runs/{training['id']}/").json()["status"] != "running":
            assert time.monotonic() < deadline, stack.logs()
            time.sleep(0.2)
        time.sleep(3.0)  # past the first epoch's setup
        train_alone, _ = training_speed(stack, training["id"], args.seconds)
        print(json.dumps({"phase": "training alone", "steps_per_s": train_alone}), flush=True)
        train_loaded, both = training_speed(stack, training["id"], args.seconds, load)
        print(json.dumps({"phase": "both", "steps_per_s": train_loaded, **both}), flush=True)
        # The baselines with the run still training: what any Django view gets of the cores left.
        beside: dict[str, Any] = {}
        for name in ("raw", "bare", "token"):
            beside[name] = load(f"{stack.base}/bench/{name}/")
            print(json.dumps({"phase": f"training: baseline {name}", **beside[name]}), flush=True)
        stack.api("a").post(f"/api/runs/{training['id']}/cancel/")

    result = {
        "bench": "api_load", "args": {**vars(args), "json": str(args.json)},
        "database": "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite",
        "baseline_raw": baselines["raw"], "baseline_raw_with_training": beside["raw"],
        "baseline_bare": baselines["bare"], "baseline_token": baselines["token"],
        "load_alone": alone, "load_with_training": both, "uvicorn_alone": by_server["none"],
        "baseline_bare_with_training": beside["bare"], "baseline_token_with_training": beside["token"],
        "training_steps_per_s_alone": train_alone, "training_steps_per_s_with_load": train_loaded,
        "requests_ratio": both["requests_per_s"] / alone["requests_per_s"],
        "training_ratio": train_loaded / train_alone if train_alone else None,
    }
    print()
    print("| web tier | phase | requests/s | p50 ms | p90 ms | p99 ms | training steps/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    labels = (("raw", "baseline: bare WSGI callable"), ("bare", "baseline: plain Django view"),
              ("token", "baseline: DRF + token"), ("detail", "`GET /api/runs/<id>/` alone"))
    for server in SERVERS:
        for name, label in labels:
            if name not in by_server[server]:
                continue
            b = by_server[server][name]
            print(f"| {SERVERS[server]} | {label} | {b['requests_per_s']:.0f} | {b.get('p50_ms')} | {b.get('p90_ms')} | "
                  f"{b.get('p99_ms')} | - |")
    print(f"| {SERVERS['nginx']} | training alone | - | - | - | - | {train_alone:.1f} |")
    print(f"| {SERVERS['nginx']} | both | {both['requests_per_s']:.0f} | {both.get('p50_ms')} | {both.get('p90_ms')} | "
          f"{both.get('p99_ms')} | {train_loaded:.1f} |")
    for name, label in labels[:3]:
        b = beside[name]
        print(f"| {SERVERS['nginx']} | {label}, a run training | {b['requests_per_s']:.0f} | {b.get('p50_ms')} | "
              f"{b.get('p90_ms')} | {b.get('p99_ms')} | - |")
    for name, label in labels[1:]:
        ratio = by_server["nginx"][name]["requests_per_s"] / by_server["none"][name]["requests_per_s"]
        print(f"{label}: front / uvicorn alone {ratio:.2f} requests/s, p99 "
              f"{by_server['nginx'][name]['p99_ms']} / {by_server['none'][name]['p99_ms']} ms")
    print(f"run detail / bare WSGI callable: {alone['requests_per_s'] / baselines['raw']['requests_per_s']:.2f}; "
          f"with a run training: {both['requests_per_s'] / beside['raw']['requests_per_s']:.2f}, p99 "
          f"{both.get('p99_ms')} / {beside['raw'].get('p99_ms')} ms")
    print(f"run detail / plain Django view: {alone['requests_per_s'] / baselines['bare']['requests_per_s']:.2f}; "
          f"run detail / DRF + token: {alone['requests_per_s'] / baselines['token']['requests_per_s']:.2f}")
    print(f"requests/s with training / alone: {result['requests_ratio']:.2f}; "
          f"training with load / alone: {result['training_ratio']:.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
