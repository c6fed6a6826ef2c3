"""The serving library comparison (docs/decisions/0015-serving-library.md): a trivial iris MLP
behind kserve's ModelServer (OIP v2) and LitServe (in-process batching), 32 concurrent clients
sending one row each, in the bench-only virtualenv.

    bench/serving_venv.sh && bench/.venv-serving/bin/python bench/serving_libraries.py [--seconds 6]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time

import httpx

HERE = os.path.dirname(os.path.abspath(__file__))

KSERVE = r'''
import sys, torch, kserve
from kserve import InferRequest, InferResponse, InferOutput
torch.set_num_threads(1)
net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.GELU(), torch.nn.Linear(16, 3)).eval()
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
'''

LITSERVE = r'''
import sys, torch, litserve as ls
torch.set_num_threads(1)
class Iris(ls.LitAPI):
    def setup(self, device):
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.GELU(), torch.nn.Linear(16, 3)).eval()
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
'''

ROW = {"inputs": [{"name": f"f{i}", "datatype": "FP32", "shape": [1], "data": [0.5 + i]} for i in range(4)]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def load(url: str, seconds: float, clients: int = 32) -> dict:
    """wrk (as bench/serving.py) when installed: its client costs the shared cores less."""
    import shutil
    import tempfile

    if shutil.which("wrk"):
        sys.path.insert(0, os.path.dirname(HERE))
        from bench.api_load import wrk

        script = os.path.join(tempfile.mkdtemp(), "post.lua")
        with open(script, "w") as f:
            f.write(f'wrk.method = "POST"\nwrk.body = {json.dumps(json.dumps(ROW))}\n'
                    'wrk.headers["Content-Type"] = "application/json"\n')
        from pathlib import Path

        return wrk(url, "-", seconds=seconds, connections=clients, threads=2, script=Path(script))
    return await load_httpx(url, seconds, clients)


async def load_httpx(url: str, seconds: float, clients: int = 32) -> dict:
    lat: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=clients), timeout=10) as http:
        async def one() -> None:
            nonlocal errors
            while time.perf_counter() < stop:
                t = time.perf_counter()
                try:
                    r = await http.post(url, json=ROW)
                    if r.status_code != 200:
                        errors += 1
                except httpx.HTTPError:
                    errors += 1
                lat.append(time.perf_counter() - t)
        t0 = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(clients)))
        wall = time.perf_counter() - t0
    lat.sort()
    return {"requests": len(lat), "rps": round(len(lat) / wall, 1), "errors": errors,
            "p50_ms": round(1000 * lat[len(lat) // 2], 1), "p99_ms": round(1000 * lat[int(len(lat) * 0.99)], 1)}


def serve(code: str, *args: str) -> subprocess.Popen:
    """The candidate as a script file (LitServe spawns its workers: it needs a __main__ module)."""
    import tempfile

    path = os.path.join(tempfile.mkdtemp(prefix="netloom-serving-lib-"), "candidate.py")
    with open(path, "w") as f:
        f.write(code)
    return subprocess.Popen([sys.executable, path, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def wait_up(url: str) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(300):
            try:
                await http.get(url)
                return
            except httpx.HTTPError:
                await asyncio.sleep(0.2)
    raise RuntimeError(f"{url} never answered")


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6.0)
    a = ap.parse_args()
    results = {}
    for name, code, args, path, health in (
        ("kserve ModelServer (OIP v2, no in-process batching)", KSERVE, [], "/v2/models/iris/infer", "/v2/health/live"),
        ("LitServe (max_batch_size 32, batch_timeout 5 ms)", LITSERVE, ["32"], "/predict", "/health"),
        ("LitServe (unbatched)", LITSERVE, ["1"], "/predict", "/health"),
    ):
        port = free_port()
        proc = serve(code, str(port), *args)
        try:
            await wait_up(f"http://127.0.0.1:{port}{health}")
            await load(f"http://127.0.0.1:{port}{path}", 1.0)  # warm-up
            results[name] = await load(f"http://127.0.0.1:{port}{path}", a.seconds)
            print(name, results[name], flush=True)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
