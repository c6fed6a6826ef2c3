"""A real service for tests: a database, Redis, a Celery worker process and the ASGI server.

The database is a SQLite file of the stack's own, or, when the test run's DATABASE_URL names
a PostgreSQL server, a fresh PostgreSQL database of the stack's own on that server (dropped
at the end), so the PostgreSQL pass of the suite runs the whole stack on PostgreSQL too.

    with ServiceStack(tmp_path, redis=RedisServer.shared(db=5)) as stack:
        stack.api("a").post("/api/runs/", {...})
        async with stack.ws("a", run_id) as ws: ...
        stack.kill_worker(); stack.start_worker()

Every stack has its own key prefix in Redis (channel layer groups and Celery queues), so stacks
and other suites can share the machine's Redis; `RedisServer.private()` starts a redis-server
of its own on a free port (for tests that restart it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from webapp.devserver import cohosted_worker_threads
from webapp.queues import QUEUES

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
# Every training step of the session's shared stack sleeps this long, so a test can act mid-run.
E2E_STEP_DELAY = 0.03


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state, ppid, ..., utime at [11]);
    None when the process has ended."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def wait_for_port(port: int, timeout: float, proc: subprocess.Popen | None = None) -> None:
    """Wait until something accepts connections on 127.0.0.1:port."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port} after {timeout}s")


class RedisServer:
    """The machine's Redis (a db number of it) or a private redis-server this test owns."""

    def __init__(self, url: str, *, port: int | None = None, folder: Path | None = None) -> None:
        self.url = url
        self.port = port
        self.folder = folder
        self.proc: subprocess.Popen | None = None

    @classmethod
    def shared(cls, db: int = 5) -> RedisServer:
        """127.0.0.1:6379/<db>; the stack's prefix keeps its keys apart."""
        return cls(f"redis://127.0.0.1:6379/{db}")

    @classmethod
    def private(cls, folder: Path) -> RedisServer:
        """A redis-server of our own (no persistence) on a free port."""
        port = free_port()
        server = cls(f"redis://127.0.0.1:{port}/0", port=port, folder=folder)
        server.start()
        return server

    @classmethod
    def for_tests(cls, folder: Any, db: int = 5) -> RedisServer:
        """The machine's Redis (db `db`) when it answers, else a private redis-server in the folder
        `folder()` makes (pytest.skip when neither is there)."""
        import pytest
        import redis

        try:
            redis.Redis.from_url(f"redis://127.0.0.1:6379/{db}", socket_timeout=2).ping()
            return cls.shared(db=db)
        except redis.RedisError:
            if not cls.available():
                pytest.skip("needs Redis on 127.0.0.1:6379 or a redis-server binary")
            return cls.private(folder())

    @staticmethod
    def available() -> bool:
        """True when a redis-server binary is installed (private servers need it)."""
        return shutil.which("redis-server") is not None

    def start(self) -> None:
        """Start (or restart) the private server on its port."""
        assert self.port is not None and self.folder is not None
        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, 10, self.proc)

    def stop(self) -> None:
        """Stop the private server (everything in it is lost, as after a crash)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None


class ServiceStack:
    """Database + worker + web server for one test module (see the module docstring)."""

    def __init__(
        self, tmp: Path, redis: RedisServer, *, step_delay: float = 0.0, dataset_processing: str = "sync",
        env: dict[str, str] | None = None, split_workers: bool = False, train_workers: int = 1,
    ) -> None:
        """`env` is added to the processes' environment (e.g. another DJANGO_SETTINGS_MODULE).

        `split_workers`: as `make run` and docker-compose, a worker on `-Q train`, one on `-Q short`
        (`self.short_worker`) and one on `-Q datasets` (`self.datasets_worker`); otherwise one
        worker serves every queue. `train_workers` > 1 (with `split_workers`): that many workers on
        `-Q train` (`self.worker` and `self.extra_workers`), as two training machines would be.
        """
        self.split_workers = split_workers
        self.train_workers = train_workers
        self.extra_workers: list[tuple[subprocess.Popen, Path]] = []
        self.short_worker: subprocess.Popen | None = None
        self.datasets_worker: subprocess.Popen | None = None
        self.tmp = Path(tmp)
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.redis = redis
        self.prefix = f"nltest-{uuid.uuid4().hex[:10]}"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.stack.e2e_settings",
            "PYTHONPATH": str(ROOT),
            "NETLOOM_E2E_DB": str(self.tmp / "netloom.sqlite3"),
            "NETLOOM_E2E_DB_URL": self._create_postgres_database(),
            "NETLOOM_E2E_REDIS": redis.url,
            "NETLOOM_E2E_PREFIX": self.prefix,
            "NETLOOM_E2E_MEDIA": str(self.tmp / "media"),
            "NETLOOM_E2E_STEP_DELAY": str(step_delay),
            "NETLOOM_E2E_DATASET_PROCESSING": dataset_processing,
            "PYTHONUNBUFFERED": "1",
            # One server process a stack (two on two cores would be make run's): a test that
            # SIGKILLs the server leaves no orphan, and the suite's stacks stay small.
            "NETLOOM_WEB_WORKERS": "1",
            # The workers share the cores with the web tier, as under `make run`.
            "NETLOOM_WORKER_THREADS": cohosted_worker_threads(),
            **(env or {}),
        }
        self.world: dict[str, Any] = {}
        self.worker: subprocess.Popen | None = None
        self.web: subprocess.Popen | None = None
        self._worker_count = 0

    # --- lifecycle ------------------------------------------------------------------------------

    def _create_postgres_database(self) -> str:
        """A new database on the suite's PostgreSQL server, or "" when the suite runs on SQLite."""
        url = os.environ.get("DATABASE_URL", "")
        if not url.startswith(("postgres://", "postgresql://")):
            return ""
        import dj_database_url
        import psycopg

        self._pg = dj_database_url.parse(url)
        self._pg_name = f"nl_{self.prefix.replace('-', '_')}"
        with psycopg.connect(**self._pg_connect_args(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self._pg_name}"')
        return url.rsplit("/", 1)[0] + "/" + self._pg_name

    def _pg_connect_args(self) -> dict[str, Any]:
        c = self._pg
        return {"host": c["HOST"], "port": c["PORT"] or 5432, "user": c["USER"],
                "password": c["PASSWORD"] or None, "dbname": c["NAME"]}

    def _drop_postgres_database(self) -> None:
        if not getattr(self, "_pg_name", None):
            return
        import psycopg

        with psycopg.connect(**self._pg_connect_args(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self._pg_name}" WITH (FORCE)')

    def __enter__(self) -> ServiceStack:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        """Migrate and seed the database, then start the worker and the web server together."""
        seed = subprocess.run(
            [PYTHON, "-m", "tests.stack.e2e_seed"], cwd=ROOT, env=self.env,
            capture_output=True, text=True, timeout=120,
        )
        if seed.returncode != 0:
            raise RuntimeError(f"seeding failed:\n{seed.stdout}\n{seed.stderr}")
        self.world = json.loads(seed.stdout.strip().splitlines()[-1])
        self.start_worker(wait=False)
        if self.split_workers:
            self.short_log = self.tmp / "worker-short.log"
            self.short_worker = subprocess.Popen(
                self._worker_args(("short",), "short"), cwd=ROOT, env=self.env,
                stdout=open(self.short_log, "ab"), stderr=subprocess.STDOUT,
            )
            self.datasets_log = self.tmp / "worker-datasets.log"
            self.datasets_worker = subprocess.Popen(
                self._worker_args(("datasets",), "datasets"), cwd=ROOT, env=self.env,
                stdout=open(self.datasets_log, "ab"), stderr=subprocess.STDOUT,
            )
        for n in range(2, self.train_workers + 1):
            log = self.tmp / f"worker-train-{n}.log"
            self.extra_workers.append((subprocess.Popen(
                self._worker_args(("train",), f"t{n}"), cwd=ROOT, env=self.env,
                stdout=open(log, "ab"), stderr=subprocess.STDOUT,
            ), log))
        self.start_web()
        self.wait_worker_ready()
        for proc, log in self.extra_workers:
            self._wait_ready(proc, log, 60)
        if self.short_worker is not None:
            self._wait_ready(self.short_worker, self.short_log, 60)
        if self.datasets_worker is not None:
            self._wait_ready(self.datasets_worker, self.datasets_log, 60)

    def start_web(self, env: dict[str, str] | None = None) -> None:
        """Start the web server (webapp/serve.py), stopping a running one first; `env` on top of
        the stack's (the benches restart it with other processes, layers or HTTP handlers)."""
        if self.web is not None and self.web.poll() is None:
            self.web.terminate()
            try:
                self.web.wait(10)
            except subprocess.TimeoutExpired:  # still closing sockets gracefully: no need
                self.web.kill()
                self.web.wait(10)
        self.web = subprocess.Popen(
            [PYTHON, "-m", "webapp.serve", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=ROOT, env={**self.env, **(env or {})}, stdout=open(self.tmp / "web.log", "ab"),
            stderr=subprocess.STDOUT,
        )
        wait_for_port(self.port, 60, self.web)

    def web_pids(self) -> list[int]:
        """The web tier's processes: webapp/serve.py and every server under it (front, HTTP, streams)."""
        assert self.web is not None
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").glob("[0-9]*"):
            fields = proc_stat(int(entry.name))
            if fields is not None:  # None: ended meanwhile
                children.setdefault(int(fields[1]), []).append(int(entry.name))
        found, todo = [], [self.web.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    def start_worker(self, *, wait: bool = True) -> None:
        """Start `celery -A webapp.celery worker -Q train,short,datasets` (solo pool: one task at a
        time); with `split_workers`, `-Q train` only."""
        self._worker_count += 1
        self.worker_log = self.tmp / f"worker-{self._worker_count}.log"
        queues = ("train",) if self.split_workers else QUEUES
        self.worker = subprocess.Popen(
            self._worker_args(queues, f"w{self._worker_count}"),
            cwd=ROOT, env=self.env, stdout=open(self.worker_log, "ab"), stderr=subprocess.STDOUT,
        )
        if wait:
            self.wait_worker_ready()

    def _worker_args(self, queues: tuple[str, ...], name: str) -> list[str]:
        return [PYTHON, "-m", "celery", "-A", "webapp.celery", "worker", "-Q", ",".join(queues), "-c", "1",
                "--pool=solo", "-n", f"{name}-{self.prefix}@%h", "--without-gossip",
                "--without-mingle", "--without-heartbeat", "-l", "info"]

    def wait_worker_ready(self, timeout: float = 60) -> None:
        """Wait for the worker's "ready" line."""
        assert self.worker is not None
        self._wait_ready(self.worker, self.worker_log, timeout)

    @staticmethod
    def _wait_ready(worker: subprocess.Popen, log: Path, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if worker.poll() is not None:
                raise RuntimeError(f"worker exited:\n{log.read_text()[-3000:]}")
            if b" ready." in log.read_bytes():
                return
            time.sleep(0.1)
        raise TimeoutError(f"worker not ready:\n{log.read_text()[-3000:]}")

    def kill_worker(self) -> None:
        """SIGKILL the worker: no cleanup, no acknowledgement, no last words."""
        assert self.worker is not None
        self.worker.send_signal(signal.SIGKILL)
        self.worker.wait(10)

    def stop_worker(self) -> None:
        """Stop the worker the polite way (SIGTERM: it finishes its task) and wait for it."""
        assert self.worker is not None
        self.worker.terminate()
        try:
            self.worker.wait(30)
        except subprocess.TimeoutExpired:
            self.worker.kill()
            self.worker.wait(10)

    def drop_queued_messages(self) -> list[str]:
        """Delete this stack's Celery queue keys ("train", "short", "datasets") from Redis; the keys
        deleted.

        What a Redis restart without persistence does to messages no worker has taken yet.
        """
        import redis

        client = redis.Redis.from_url(self.redis.url, socket_timeout=5)
        deleted = []
        for queue in QUEUES:
            # The Redis transport keeps one list per queue (and one per priority step).
            for key in client.scan_iter(match=f"{self.prefix}:{queue}*", count=500):
                client.delete(key)
                deleted.append(key.decode())
        return deleted

    def stop(self) -> None:
        """Stop the processes this stack started (and its private Redis)."""
        procs = [self.worker, *(p for p, _ in self.extra_workers), self.short_worker, self.datasets_worker, self.web]
        for proc in procs:
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for proc in procs:
            if proc is not None:
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
        if self.redis.proc is None and self.redis.port is None:
            self._forget_keys()
        self.redis.stop()
        self._drop_postgres_database()

    def _forget_keys(self) -> None:
        """Remove this stack's keys from the shared Redis (queues, unacked messages, groups)."""
        import redis

        try:
            client = redis.Redis.from_url(self.redis.url, socket_timeout=5)
            for key in client.scan_iter(match=f"{self.prefix}*", count=500):
                client.delete(key)
        except redis.RedisError:
            pass

    # --- clients ------------------------------------------------------------------------------

    def token(self, who: str) -> str:
        """The API token of "a" (admin of team A), "b" (admin of team B) or "viewer_a"."""
        return self.world[who]["token"]

    def api(self, who: str | None) -> Http:
        """An HTTP client with that user's token (None: anonymous)."""
        return Http(self.base, self.token(who) if who is not None else None)

    def ws_url(self, run_id: int, since: int | None = None) -> str:
        """The run's stream URL."""
        query = f"?since={since}" if since is not None else ""
        return f"ws://127.0.0.1:{self.port}/ws/runs/{run_id}/{query}"

    def create_run(self, who: str = "a", **config: Any) -> dict[str, Any]:
        """POST /api/runs/ for the user's team graph on iris; returns the run JSON."""
        mine = self.world[who if who in ("a", "b") else "a"]
        body = {"graph": mine["graph"], "revision": 1, "dataset": mine["dataset"],
                "config": {"batch_size": 16, "log_every": 1, "device": "cpu", **config}}
        response = self.api(who).post("/api/runs/", json=body)
        assert response.status_code == 201, response.text
        return response.json()

    def logs(self) -> str:
        """The tails of the worker and web logs (for assertion messages)."""
        parts = []
        for path in sorted(self.tmp.glob("*.log")):
            parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-4000:]}")
        return "\n".join(parts)


class Response:
    """What an HTTP call answered."""

    def __init__(self, status_code: int, headers: Any, content: bytes) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content

    @property
    def text(self) -> str:
        """The body as text."""
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.content)


class Http:
    """A tiny HTTP client on urllib (the test environment has no requests/httpx)."""

    def __init__(self, base: str, token: str | None) -> None:
        self.base = base
        self.token = token

    def request(
        self, method: str, path: str, json_body: Any = None, *, body: bytes | None = None,
        content_type: str = "application/json",
    ) -> Response:
        """Send one request (a JSON body, or raw `body` bytes); errors are answers too."""
        data = json.dumps(json_body).encode() if json_body is not None else body
        request = urllib.request.Request(self.base + path, data=data, method=method.upper())
        if data is not None:
            request.add_header("Content-Type", content_type)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return Response(answer.status, answer.headers, answer.read())
        except urllib.error.HTTPError as error:
            return Response(error.code, error.headers, error.read())

    def get(self, path: str) -> Response:
        """GET path."""
        return self.request("GET", path)

    def post(self, path: str, json: Any = None) -> Response:  # noqa: A002 - mirrors requests
        """POST a JSON body."""
        return self.request("POST", path, json_body=json if json is not None else {})

    def post_multipart(
        self, path: str, fields: dict[str, Any], files: dict[str, tuple[str, bytes]]
    ) -> Response:
        """POST a multipart/form-data body: text `fields` and `files` as {name: (filename, bytes)}."""
        boundary = f"----netloom{uuid.uuid4().hex}"
        parts: list[bytes] = []
        for name, value in fields.items():
            parts.append(
                f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
            )
        for name, (filename, content) in files.items():
            parts.append(
                f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n".encode() + content + b"\r\n"
            )
        parts.append(f"--{boundary}--\r\n".encode())
        return self.request(
            "POST", path, body=b"".join(parts), content_type=f"multipart/form-data; boundary={boundary}"
        )
