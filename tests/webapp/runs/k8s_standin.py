"""A stand-in for the Kubernetes API, for the runner's tests: no kube-apiserver is installable here.

Neither PyPI, npm nor Debian ship a kube-apiserver (Debian has etcd-server only), so the runner
(webapp/runs/scheduling/kubernetes.py::ClusterApi, through the official client) talks to this
HTTP server instead. It answers the few routes the runner uses, as the API server does (paths,
status codes, `Status` bodies, label selectors), and holds every posted object to what a real one
would refuse: kubernetes-validate's strict Kubernetes 1.33 schema (the check tests/test_k8s.py
uses), `fieldValidation=Strict` asked, the namespace of the path. What the controllers do is
played by the test through its methods: Kueue (a Workload per queued Job, pending with Kueue's own
message, then admitted: the Job unsuspended) and the kubelet (each pod's exact command run as a
local process, its exit written back as the pod's status and the Job's condition).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import kubernetes_validate

ROOT = Path(__file__).resolve().parents[3]
KUEUE_PENDING = ("couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor "
                 "default-flavor, previously considered podsets requests (0) + current podset request (8) > "
                 "maximum capacity (4)")


def _selector(query: dict[str, list[str]]) -> dict[str, str]:
    found = {}
    for part in (query.get("labelSelector") or [""])[0].split(","):
        if "=" in part:
            key, value = part.split("=", 1)
            found[key] = value
    return found


def _matches(obj: dict[str, Any], selector: dict[str, str]) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


class StandInCluster:
    """The API's objects (jobs, services, pods, workloads) and what the controllers would do."""

    def __init__(self, namespace: str = "netloom") -> None:
        self.namespace = namespace
        self.lock = threading.RLock()
        self.jobs: dict[str, dict[str, Any]] = {}
        self.services: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.workloads: dict[str, dict[str, Any]] = {}
        self.posted: list[dict[str, Any]] = []
        self.refused: list[str] = []
        self.deletes: list[tuple[str, str, str | None]] = []  # (kind, name, propagationPolicy)
        self.processes: dict[str, list[subprocess.Popen]] = {}
        self.image_pull_fails = False
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        server.daemon_threads = True
        self.server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, name="k8s-standin", daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        with self.lock:
            for procs in self.processes.values():
                for proc in procs:
                    if proc.poll() is None:
                        proc.kill()

    # --- the API server ---------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        cluster = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length) or b"null") if length else None

            def _route(self, method: str) -> None:
                url = urlparse(self.path)
                code, body = cluster.request(method, url.path, parse_qs(url.query), self._body())
                self._answer(code, body)

            def do_GET(self) -> None:
                self._route("GET")

            def do_POST(self) -> None:
                self._route("POST")

            def do_DELETE(self) -> None:
                self._route("DELETE")

        return Handler

    @staticmethod
    def status(code: int, reason: str, message: str) -> tuple[int, dict[str, Any]]:
        return code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
                      "message": message, "code": code}

    def request(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, dict[str, Any]]:
        parts = path.strip("/").split("/")
        routes = {
            ("api", "v1", "namespaces", None, "services"): ("Service", self.services),
            ("apis", "batch", "v1", "namespaces", None, "jobs"): ("Job", self.jobs),
            ("api", "v1", "namespaces", None, "pods"): ("Pod", self.pods),
            ("apis", "kueue.x-k8s.io", "v1beta2", "namespaces", None, "workloads"): ("Workload", self.workloads),
        }
        for route, (kind, store) in routes.items():
            n = len(route)
            if len(parts) in (n, n + 1) and all(r is None or r == p for r, p in zip(route, parts, strict=False)):
                namespace = parts[route.index(None)]
                name = parts[n] if len(parts) == n + 1 else None
                with self.lock:
                    return self._serve(method, kind, store, namespace, name, query, body)
        return self.status(404, "NotFound", f"the server could not find the requested resource {path}")

    def _serve(self, method: str, kind: str, store: dict[str, dict[str, Any]], namespace: str, name: str | None,
               query: dict[str, list[str]], body: Any) -> tuple[int, dict[str, Any]]:
        if namespace != self.namespace:
            return self.status(404, "NotFound", f"namespace {namespace} not found")
        if method == "GET" and name is None:
            selector = _selector(query)
            return 200, {"kind": f"{kind}List", "apiVersion": "v1",
                         "items": [json.loads(json.dumps(o)) for o in store.values() if _matches(o, selector)]}
        if method == "GET":
            if name not in store:
                return self.status(404, "NotFound", f'{kind.lower()}s "{name}" not found')
            return 200, json.loads(json.dumps(store[name]))
        if method == "POST" and name is None and kind in ("Job", "Service"):
            return self._create(kind, store, body, query)
        if method == "DELETE" and name is not None and kind in ("Job", "Service"):
            if name not in store:
                return self.status(404, "NotFound", f'{kind.lower()}s "{name}" not found')
            policy = (body or {}).get("propagationPolicy") or (query.get("propagationPolicy") or [None])[0]
            self.deletes.append((kind, name, policy))
            store.pop(name)
            if kind == "Job":
                self._job_gone(name)
            return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
        return self.status(405, "MethodNotAllowed", f"{method} is not supported here")

    def _create(self, kind: str, store: dict[str, dict[str, Any]], body: Any,
                query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        if (query.get("fieldValidation") or [""])[0] != "Strict":
            self.refused.append("fieldValidation=Strict not asked")
            return self.status(400, "BadRequest", "the stand-in wants fieldValidation=Strict")
        if not isinstance(body, dict) or body.get("kind") != kind:
            return self.status(400, "BadRequest", f"expected a {kind}")
        try:
            kubernetes_validate.validate(body, "1.33.0", strict=True)
        except kubernetes_validate.ValidationError as exc:
            self.refused.append(f"{kind}: {exc.message} at {list(exc.path)}")
            return self.status(422, "Invalid", f"{kind} is invalid: {exc.message} at {list(exc.path)}")
        metadata = body["metadata"]
        if metadata.get("namespace", self.namespace) != self.namespace:
            return self.status(400, "BadRequest", "the namespace of the provided object does not match the request")
        if metadata["name"] in store:
            return self.status(409, "AlreadyExists", f'{kind.lower()}s "{metadata["name"]}" already exists')
        obj = json.loads(json.dumps(body))
        obj["metadata"].update(uid=str(uuid.uuid4()), namespace=self.namespace, creationTimestamp="2026-01-01T00:00:00Z")
        obj["status"] = {}
        store[metadata["name"]] = obj
        self.posted.append(json.loads(json.dumps(obj)))
        if kind == "Job":
            self._job_created(obj)
        return 201, obj

    # --- the controllers, played by the test ------------------------------------------------

    def _job_created(self, job: dict[str, Any]) -> None:
        """Kueue's webhook and controller: a queued Job gets a Workload, pending for quota."""
        labels = job["metadata"]["labels"]
        if "kueue.x-k8s.io/queue-name" not in labels:
            return
        name = f"job-{job['metadata']['name']}-{job['metadata']['uid'][:5]}"
        self.workloads[name] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": self.namespace,
                         "labels": {"kueue.x-k8s.io/job-uid": job["metadata"]["uid"]}},
            "spec": {"queueName": labels["kueue.x-k8s.io/queue-name"],
                     "priorityClassName": labels.get("kueue.x-k8s.io/priority-class")},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                       "message": KUEUE_PENDING}]},
        }

    def workload_of(self, job_name: str) -> dict[str, Any] | None:
        with self.lock:
            uid = self.jobs[job_name]["metadata"]["uid"]
            return next((w for w in self.workloads.values() if w["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == uid), None)

    def admit(self, job_name: str) -> None:
        """Kueue admits the Workload and unsuspends the Job; the kubelet starts its pods."""
        with self.lock:
            job = self.jobs[job_name]
            workload = self.workload_of(job_name)
            if workload is not None:
                workload["status"]["conditions"] = [
                    {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved"},
                    {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted"},
                ]
            job["spec"]["suspend"] = False
            self._start_pods(job)

    def _start_pods(self, job: dict[str, Any]) -> None:
        """Each pod of the Indexed Job: its container's exact command and environment as a local
        process (pod 0's DNS name is loopback here; the media volume is mounted where the
        workers have MEDIA_ROOT, so its paths are this machine's)."""
        name = job["metadata"]["name"]
        spec = job["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        argv = list(container["command"])
        endpoint = argv[argv.index("--rdzv-endpoint") + 1]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        argv = [sys.executable if a == "python" else a.replace(endpoint, f"127.0.0.1:{port}") for a in argv]
        env = {**os.environ, **{e["name"]: e["value"] for e in container.get("env", [])}, "PYTHONPATH": str(ROOT)}
        job["status"]["active"] = job["spec"]["completions"]
        procs = []
        for index in range(job["spec"]["completions"]):
            pod_name = f"{name}-{index}-abcde"
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": pod_name, "namespace": self.namespace,
                                "labels": {**job["spec"]["template"]["metadata"]["labels"], "job-name": name}},
                   "status": {"phase": "Pending", "containerStatuses": []}}
            self.pods[pod_name] = pod
            if self.image_pull_fails:
                pod["status"]["containerStatuses"] = [{"name": "ranks", "state": {"waiting": {
                    "reason": "ErrImagePull",
                    "message": f'failed to pull image "{container["image"]}": not found'}}}]
                continue
            proc = subprocess.Popen(argv, cwd=ROOT, env={**env, "JOB_COMPLETION_INDEX": str(index)},
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            pod["status"].update(phase="Running", containerStatuses=[{"name": "ranks", "state": {"running": {}}}])
            procs.append(proc)
            threading.Thread(target=self._kubelet, args=(name, pod_name, proc), daemon=True).start()
        self.processes[name] = procs

    def _kubelet(self, job_name: str, pod_name: str, proc: subprocess.Popen) -> None:
        """A pod's process ended: its status, then the Job's condition once every pod has."""
        out, _ = proc.communicate()
        with self.lock:
            pod = self.pods.get(pod_name)
            if pod is None:
                return
            pod["log"] = out.decode(errors="replace")[-4000:]
            code = proc.returncode
            pod["status"].update(phase="Succeeded" if code == 0 else "Failed", containerStatuses=[
                {"name": "ranks", "state": {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}}}])
            job = self.jobs.get(job_name)
            if job is None:
                return
            pods = [p for p in self.pods.values() if p["metadata"]["labels"].get("job-name") == job_name]
            if any(p["status"]["phase"] == "Failed" for p in pods):
                job["status"].update(active=0, failed=1, conditions=[
                    {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                     "message": "Job has reached the specified backoff limit"}])
            elif all(p["status"]["phase"] == "Succeeded" for p in pods):
                job["status"].update(active=0, succeeded=len(pods), conditions=[
                    {"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}])

    def _job_gone(self, name: str) -> None:
        """The garbage collector: the Job's pods (their processes) and its Workload go with it."""
        for proc in self.processes.pop(name, []):
            if proc.poll() is None:
                proc.kill()
        for pod_name in [p for p, pod in self.pods.items() if pod["metadata"]["labels"].get("job-name") == name]:
            self.pods.pop(pod_name)
        for workload in [w for w, obj in self.workloads.items() if obj["metadata"]["name"].startswith(f"job-{name}-")]:
            self.workloads.pop(workload)

    def logs(self, job_name: str) -> str:
        with self.lock:
            return "\n".join(p.get("log", "") for p in self.pods.values() if p["metadata"]["labels"].get("job-name") == job_name)
