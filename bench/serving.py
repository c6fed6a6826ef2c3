"""The model server under 32 concurrent clients, against the run predict route and the baseline
a user would write (docs/benchmarks.md "Serving a model").

Starts the real stack (tests/stack/stack.py with bench/stack/settings.py), trains an iris MLP,
registers it as version 1 of a model with `production` -> 1, starts `python -m serving`, and
measures with wrk (`--connections` connections, each sending one row per request, for `--seconds`):

(a) `POST /v2/models/<served>/infer` on the model server (OIP v2, one row, dynamic batching),
    through the front (nginx) and directly;
(b) `POST /api/runs/<id>/predict/` (the run route, through Django);
(c) a one-request-at-a-time `http.server` around the version's own `predict.py` (load once,
    `predict(model, row)` per request, a connection per request as http.server's HTTP/1.0
    does): what a user would write around the download.

    .venv/bin/python bench/serving.py [--seconds 8] [--connections 32] [--json var/bench/serving.json]
                                      [--profile var/bench/serving.prof]

`--profile`: after the measured passes, one more direct pass with cProfile on in the model
server's event loop thread (switched on and off by signals, so the measured passes run without
it), and the share of that thread's own time per package (kserve, fastapi, pydantic, ...).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.api_load import cpu_seconds, wrk  # noqa: E402

COLUMNS = ["sepal length (cm)", "sepal width (cm)", "petal length (cm)", "petal width (cm)"]
ROW = [5.9, 3.0, 4.2, 1.5]

BASELINE = textwrap.dedent('''
    import json, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    sys.path.insert(0, sys.argv[1])
    import torch
    torch.set_num_threads(1)
    from predict import load, predict
    model = load(sys.argv[1])
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            row = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            body = json.dumps(predict(model, row)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *args):
            pass
    class Server(HTTPServer):
        request_queue_size = 128
        def handle_error(self, request, client_address):
            pass  # wrk closing its connections at the end
    Server(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
''')


# `python -m serving` with cProfile switched on by SIGUSR1 and off (stats dumped) by SIGUSR2, in the
# main thread: the event loop, where requests are parsed, routed, validated and answered.
PROFILED = textwrap.dedent('''
    import cProfile, runpy, signal, sys
    out = sys.argv[1]
    profile = cProfile.Profile()
    signal.signal(signal.SIGUSR1, lambda *_: profile.enable())
    def dump(*_):
        profile.disable()
        profile.dump_stats(out)
    signal.signal(signal.SIGUSR2, dump)
    sys.argv = ["serving"]
    runpy.run_module("serving", run_name="__main__", alter_sys=True)
''')

PACKAGES = ("kserve", "fastapi", "starlette", "pydantic", "pydantic_core", "uvicorn", "httptools", "orjson",
            "prometheus_client", "numpy", "torch", "asyncio", "json", "logging", "serving", "engine")


def profile_shares(path: Path, top: int = 25) -> dict[str, Any]:
    """The profiled thread's own time by package, and the functions with the most cumulative time."""
    import pstats

    stats = pstats.Stats(str(path))
    by_package: dict[str, float] = {}
    total = 0.0
    rows = []
    for (filename, line, func), (_, calls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        total += tottime
        parts = Path(filename).parts
        package = next((p for p in parts[::-1] if p in PACKAGES), None)
        if package is None:
            package = "builtins" if filename == "~" else "other"
        by_package[package] = by_package.get(package, 0.0) + tottime
        rows.append((cumtime, calls, f"{Path(filename).name}:{line}({func})" if filename != "~" else func))
    shares = {k: round(100 * v / total, 1) for k, v in sorted(by_package.items(), key=lambda kv: -kv[1])}
    rows.sort(reverse=True)
    return {"own_time_share_pct": shares, "total_s": round(total, 3),
            "top_cumulative": [{"cum_s": round(c, 3), "calls": n, "where": w} for c, n, w in rows[:top]]}


def post_script(folder: Path, body: Any) -> Path:
    """A wrk script that POSTs `body` as JSON."""
    path = folder / f"post-{abs(hash(json.dumps(body)))}.lua"
    path.write_text(f'wrk.method = "POST"\nwrk.body = {json.dumps(json.dumps(body))}\n'
                    'wrk.headers["Content-Type"] = "application/json"\n')
    return path


def measure(url: str, token: str, script: Path, args: Any, pids: list[int]) -> dict[str, Any]:
    """wrk's figures, and the CPU the serving processes (`pids`) spent per answered request: on
    two shared cores wrk itself caps the requests/s, so the CPU per request says which scales."""
    wrk_args = dict(seconds=2, connections=args.connections, threads=2)
    wrk(url, token, **wrk_args, script=script)  # warm-up: connections, threads, first batches
    before = sum(cpu_seconds(pid) for pid in pids)
    result = wrk(url, token, seconds=args.seconds, connections=args.connections, threads=2, script=script)
    spent = sum(cpu_seconds(pid) for pid in pids) - before
    result["server_cpu_ms_per_request"] = round(1000 * spent / max(1, result["requests"] or 1), 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--profile", type=Path, default=None, help="cProfile output of a last, profiled pass")
    args = parser.parse_args()

    from tests.stack.stack import RedisServer, ServiceStack, free_port, wait_for_port
    from tests.stack.test_run_e2e import wait_status

    tmp = Path(tempfile.mkdtemp(prefix="netloom-serving-bench-"))
    env = {"DJANGO_SETTINGS_MODULE": "bench.stack.settings", "NETLOOM_WEB_LOG_LEVEL": "warning"}
    results: dict[str, Any] = {}
    with ServiceStack(tmp, RedisServer.shared(db=6), env=env) as stack:
        api = stack.api("a")
        run = stack.create_run(epochs=2)
        assert wait_status(stack, run["id"], {"succeeded", "failed"})["status"] == "succeeded"
        model = api.post("/api/models/", json={"team": stack.world["a"]["team"], "name": "iris bench"}).json()
        assert api.post(f"/api/models/{model['id']}/versions/", json={"run": run["id"]}).status_code == 201
        assert api.request("PUT", f"/api/models/{model['id']}/aliases/production/", {"version": 1}).status_code == 200
        served = f"{model['id']}-iris-bench"
        folder = Path(stack.env["NETLOOM_E2E_MEDIA"]) / "registry" / str(model["id"]) / "1"

        port = free_port()
        command = ([sys.executable, "-c", PROFILED, str(args.profile.resolve())] if args.profile
                   else [sys.executable, "-m", "serving"])
        if args.profile:
            args.profile.parent.mkdir(parents=True, exist_ok=True)
        server = subprocess.Popen(command, cwd=ROOT,
                                  env={**stack.env, "SERVING_PORT": str(port)},
                                  stdout=open(tmp / "serving.log", "ab"), stderr=subprocess.STDOUT)
        base_port = free_port()
        baseline = subprocess.Popen([sys.executable, "-c", BASELINE, str(folder), str(base_port)], cwd=tmp)
        try:
            wait_for_port(port, 120, server)
            wait_for_port(base_port, 120, baseline)
            stack.start_web({"SERVING_PORT": str(port), "NETLOOM_WEB_LOG_LEVEL": "warning"})
            time.sleep(2)
            token = stack.token("a")
            oip = {"inputs": [{"name": c, "datatype": "FP32", "shape": [1], "data": [v]}
                              for c, v in zip(COLUMNS, ROW, strict=True)]}
            row = dict(zip(COLUMNS, ROW, strict=True))
            web = [p for p in stack.web_pids() if p != stack.web.pid]  # nginx, granian, uvicorn
            cases = {
                "serving (front)": (f"{stack.base}/v2/models/{served}/infer", oip, [server.pid]),
                "serving (direct)": (f"http://127.0.0.1:{port}/v2/models/{served}/infer", oip, [server.pid]),
                "run predict route": (f"{stack.base}/api/runs/{run['id']}/predict/", {"input": row}, web),
                "http.server + predict.py": (f"http://127.0.0.1:{base_port}/", row, [baseline.pid]),
            }
            for name, (url, body, pids) in cases.items():
                results[name] = measure(url, token, post_script(tmp, body), args, pids)
                print(f"{name:28s} {json.dumps(results[name])}", flush=True)
            if args.profile:
                import signal

                url, body, pids = cases["serving (direct)"]
                server.send_signal(signal.SIGUSR1)
                profiled = measure(url, token, post_script(tmp, body), args, pids)
                server.send_signal(signal.SIGUSR2)
                time.sleep(2)
                results["profile"] = {"requests_under_profiler": profiled["requests"],
                                      **profile_shares(args.profile)}
                print(json.dumps(results["profile"], indent=2), flush=True)
        finally:
            for proc in (server, baseline):
                proc.terminate()
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
    a = results["serving (front)"]["requests_per_s"]
    ratios = {"vs run predict route": round(a / results["run predict route"]["requests_per_s"], 2),
              "vs http.server + predict.py": round(a / results["http.server + predict.py"]["requests_per_s"], 2)}
    print(json.dumps({"results": results, "ratios": ratios}, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"results": results, "ratios": ratios}, indent=2))


if __name__ == "__main__":
    main()
