"""The serving library comparison (docs/decisions/0015-serving-library.md): a trivial iris MLP
(4 -> 16 -> 3) behind each candidate made for serving, 32 wrk connections sending one row each,
in a bench-only virtualenv (never the project's dependencies):

- kserve's ModelServer (OIP v2 routes; no in-process batching), what serving/ runs on;
- LitServe, batched (max_batch_size 32, batch_timeout 5 ms) and unbatched;
- Ray Serve, `@serve.batch` (max_batch_size 32, batch_wait_timeout_s 5 ms) behind its HTTP proxy;
- BentoML, adaptive batching (`@bentoml.api(batchable=True)`, max_batch_size 32);
- a one-request-at-a-time `http.server` around the same network: the baseline a user would write.

Each candidate runs in the bench virtualenv's python as its own process, with all it starts (Ray's
GCS, raylet, proxy and replica; BentoML's worker). The figures are wrk's, plus the CPU the
candidate's whole process tree spent per answered request (on two shared cores wrk caps the
requests/s, so the CPU per request says which would scale) and the tree's resident memory.

Make the virtualenv once (bench/serving_venv.sh pins every candidate), then:

    bench/serving_venv.sh /work/benchvenv
    .venv/bin/python bench/serving_libraries.py --venv /work/benchvenv [--seconds 8] [--only ray,bentoml]
                                                 [--json var/bench/serving_libraries.json]

(`make bench-serving-peers` does both, the virtualenv in bench/.venv-serving.)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.api_load import cpu_seconds, wrk  # noqa: E402

# The same weights in every candidate (seeded): their answers to the same row agree.
NET = "(torch.manual_seed(0), torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.GELU(), torch.nn.Linear(16, 3)).eval())[1]"

KSERVE = r'''
import sys, torch, kserve
from kserve import InferRequest, InferResponse, InferOutput
torch.set_num_threads(1)
net = NET
class Iris(kserve.Model):
    def __init__(self):
        super().__init__("iris"); self.ready = True
    async def predict(self, payload, headers=None):
        cols = [torch.tensor(i.data, dtype=torch.float32) for i in payload.inputs]
        with torch.no_grad():
            p = torch.softmax(net(torch.stack(cols, 1)), 1)
        out = InferOutput("probabilities", list(p.shape), "FP32", p.reshape(-1).tolist())
        return InferResponse(payload.id or "", "iris", [out])
kserve.ModelServer(http_port=int(sys.argv[1]), workers=1, enable_grpc=False).start([Iris()])
'''.replace("NET", NET)

LITSERVE = r'''
import sys, torch, litserve as ls
torch.set_num_threads(1)
class Iris(ls.LitAPI):
    def setup(self, device):
        self.net = NET
    def decode_request(self, request):
        return [request["inputs"][i]["data"][0] for i in range(4)]
    def batch(self, xs):
        return torch.tensor(xs, dtype=torch.float32)
    def predict(self, x):
        with torch.no_grad():  # a batch (N, 4), or one row's list when unbatched
            return torch.softmax(self.net(torch.as_tensor(x, dtype=torch.float32).reshape(-1, 4)), 1)
    def unbatch(self, y):
        return list(y)
    def encode_response(self, p):
        return {"outputs": [{"name": "probabilities", "datatype": "FP32", "shape": [1, 3], "data": p.reshape(-1).tolist()}]}
if __name__ == "__main__":
    api = Iris(max_batch_size=int(sys.argv[2]), batch_timeout=0.005)
    ls.LitServer(api, accelerator="cpu", workers_per_device=1, track_requests=False).run(port=int(sys.argv[1]), generate_client_file=False)
'''.replace("NET", NET)

# Ray Serve: a local Ray cluster (GCS, raylet, the HTTP proxy actor, one replica actor) started by
# this driver; the replica batches rows with @serve.batch. SIGTERM shuts the cluster down.
RAY = r'''
import os, signal, sys, time
import ray, torch
from ray import serve
from starlette.requests import Request

@serve.deployment(num_replicas=1, max_ongoing_requests=256, ray_actor_options={"num_cpus": 0})
class Iris:
    def __init__(self):
        torch.set_num_threads(1)
        self.net = NET
    @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.005)
    async def predict(self, rows):
        with torch.no_grad():
            p = torch.softmax(self.net(torch.tensor(rows, dtype=torch.float32)), 1)
        return [{"outputs": [{"name": "probabilities", "datatype": "FP32", "shape": [1, 3], "data": r}]}
                for r in p.tolist()]
    async def __call__(self, request: Request):
        body = await request.json()
        return await self.predict([body["inputs"][i]["data"][0] for i in range(4)])

def stop(*_):
    serve.shutdown(); ray.shutdown(); sys.exit(0)
signal.signal(signal.SIGTERM, stop)
ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 1024 * 1024, log_to_driver=False,
         logging_level="WARNING")
serve.start(http_options={"host": "127.0.0.1", "port": int(sys.argv[1])})
serve.run(Iris.bind(), name="iris", route_prefix="/predict")
print("ready", flush=True)
while True:
    time.sleep(3600)
'''.replace("NET", NET)

# BentoML: a batchable API (its adaptive batching dispatcher); the body names the API's parameter,
# a (1, 4) array per request, concatenated along dimension 0 into batches.
BENTOML = r'''
import sys
import bentoml, numpy as np, torch

@bentoml.service(workers=1, traffic={"timeout": 10, "max_concurrency": 256})
class Iris:
    def __init__(self):
        torch.set_num_threads(1)
        self.net = NET
    @bentoml.api(batchable=True, batch_dim=0, max_batch_size=32, max_latency_ms=1000)
    def predict(self, rows: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return torch.softmax(self.net(torch.as_tensor(rows, dtype=torch.float32)), 1).numpy()

if __name__ == "__main__":
    Iris.serve_http(port=int(sys.argv[1]), host="127.0.0.1")
'''.replace("NET", NET)

BASELINE = r'''
import json, sys, torch
from http.server import BaseHTTPRequestHandler, HTTPServer
torch.set_num_threads(1)
net = NET
class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with torch.no_grad():
            p = torch.softmax(net(torch.tensor([[i["data"][0] for i in body["inputs"]]], dtype=torch.float32)), 1)
        out = json.dumps({"outputs": [{"name": "probabilities", "datatype": "FP32", "shape": [1, 3],
                                       "data": p.reshape(-1).tolist()}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *args):
        pass
class Server(HTTPServer):
    request_queue_size = 128
    def handle_error(self, request, client_address):
        pass  # wrk closing its connections at the end
Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
'''.replace("NET", NET)

ROW = {"inputs": [{"name": f"f{i}", "datatype": "FP32", "shape": [1], "data": [0.5 + i]} for i in range(4)]}
BENTO_ROW = {"rows": [[0.5 + i for i in range(4)]]}

# name -> (code, extra argv, infer path, body, health path)
CANDIDATES: dict[str, tuple[str, list[str], str, dict[str, Any], str]] = {
    "kserve": (KSERVE, [], "/v2/models/iris/infer", ROW, "/v2/health/live"),
    "litserve-batched": (LITSERVE, ["32"], "/predict", ROW, "/health"),
    "litserve": (LITSERVE, ["1"], "/predict", ROW, "/health"),
    "ray": (RAY, [], "/predict", ROW, "/-/healthz"),
    "bentoml": (BENTOML, [], "/predict", BENTO_ROW, "/readyz"),
    "http.server": (BASELINE, [], "/", ROW, "/"),
}
LABELS = {
    "kserve": "kserve ModelServer (OIP v2, no in-process batching)",
    "litserve-batched": "LitServe (max_batch_size 32, batch_timeout 5 ms)",
    "litserve": "LitServe (unbatched)",
    "ray": "Ray Serve (@serve.batch max_batch_size 32, wait 5 ms)",
    "bentoml": "BentoML (adaptive batching, max_batch_size 32)",
    "http.server": "plain http.server, one request at a time",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree(pid: int) -> set[int]:
    """`pid` and every process below it (Ray's raylet starts the workers: grandchildren)."""
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        found.add(p)
        for task in Path(f"/proc/{p}/task").glob("*/children") if Path(f"/proc/{p}").exists() else ():
            try:
                todo.extend(int(c) for c in task.read_text().split())
            except OSError:
                pass
    return found


def rss_mb(pid: int) -> float:
    """Resident memory of a process (MiB; 0 once it has ended). Shared pages count in each process."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def tree_cpu(pid: int) -> dict[int, float]:
    return {p: cpu_seconds(p) for p in tree(pid)}


def measure(url: str, body: dict[str, Any], pid: int, seconds: float, connections: int) -> dict[str, Any]:
    """A warm-up, then wrk for `seconds`; the CPU the candidate's process tree spent per request."""
    script = Path(tempfile.mkdtemp(prefix="netloom-serving-lib-")) / "post.lua"
    script.write_text(f'wrk.method = "POST"\nwrk.body = {json.dumps(json.dumps(body))}\n'
                      'wrk.headers["Content-Type"] = "application/json"\n')
    wrk(url, "-", seconds=2, connections=connections, threads=2, script=script)
    before = tree_cpu(pid)
    result = wrk(url, "-", seconds=seconds, connections=connections, threads=2, script=script)
    after = tree_cpu(pid)
    spent = sum(after[p] - before.get(p, 0.0) for p in after)
    result["server_cpu_ms_per_request"] = round(1000 * spent / max(1, result["requests"] or 1), 3)
    result["server_processes"] = len(after)
    result["server_rss_mb"] = round(sum(rss_mb(p) for p in after), 1)
    return result


def start(python: str, code: str, args: list[str], log: Path) -> subprocess.Popen:
    """The candidate as a script file (LitServe spawns its workers: it needs a __main__ module), in
    its own session so that stopping it reaches all it started."""
    path = Path(tempfile.mkdtemp(prefix="netloom-serving-lib-")) / "candidate.py"
    path.write_text(code)
    return subprocess.Popen([python, str(path), *args], stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            cwd=path.parent, start_new_session=True,
                            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "BENTOML_DO_NOT_TRACK": "true"})


def wait_up(url: str, proc: subprocess.Popen, limit_s: float = 180) -> None:
    import httpx

    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode} before answering")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{url} did not answer 200 within {limit_s:.0f} s")


def check(url: str, body: dict[str, Any]) -> Any:
    """One request's answer (the same weights everywhere: the same probabilities)."""
    import httpx

    answer = httpx.post(url, json=body, timeout=120)  # the first request may start a replica
    answer.raise_for_status()
    return answer.json()


def stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            # The session's other processes (Ray's raylet, workers) outlive a driver that exited.
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue
        return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=ROOT / "bench" / ".venv-serving",
                        help="the bench-only virtualenv (bench/serving_venv.sh makes it)")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--only", default=",".join(CANDIDATES), help=f"a comma list of {', '.join(CANDIDATES)}")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    python = str(args.venv / "bin" / "python")
    if not os.access(python, os.X_OK):
        sys.exit(f"no virtualenv at {args.venv}: make it with bench/serving_venv.sh {args.venv}")
    logs = Path(tempfile.mkdtemp(prefix="netloom-serving-libs-"))
    results: dict[str, Any] = {"load_average_before": os.getloadavg()[0]}
    for name in args.only.split(","):
        code, extra, path, body, health = CANDIDATES[name]
        port = free_port()
        log = logs / f"{name}.log"
        proc = start(python, code, [str(port), *extra], log)
        try:
            wait_up(f"http://127.0.0.1:{port}{health}", proc)
            url = f"http://127.0.0.1:{port}{path}"
            answer = check(url, body)
            results[name] = {"label": LABELS[name], **measure(url, body, proc.pid, args.seconds, args.connections),
                             "answer": answer}
        except Exception as exc:  # a candidate that cannot run here is a finding, with its log
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            results[name] = {"label": LABELS[name], "failed": f"{type(exc).__name__}: {exc}", "log_tail": tail}
        finally:
            stop(proc)
        print(f"{name:18s} {json.dumps({k: v for k, v in results[name].items() if k != 'log_tail'})}", flush=True)
    results["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
