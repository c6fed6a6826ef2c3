"""`python -m webapp.devserver` (what `make run` runs): everything on one machine, one command.

Migrates, collects static files, creates the demo login, starts a private Redis when none is
reachable at REDIS_URL (installing redis-server first when it is missing and we are root; else it
says in one line what to do), three Celery workers as docker-compose has them -- one for training
(`-Q train`: at start it consumes the train queues its devices fit, webapp/runs/scheduling/devices.py),
one for short jobs (`-Q short`: explanations and exports, so none waits behind a long run) and one
for uploads (`-Q datasets`: a large archive's check never holds another team's explanation) -- and
the ASGI server on 127.0.0.1:$PORT (8000). Uploads are processed
by the worker (NETLOOM_DATASET_PROCESSING=celery unless the environment says otherwise).

Each checkout is its own instance: NETLOOM_INSTANCE (the Redis key prefix of its Celery queues and
channel-layer groups, webapp/settings.py) defaults to "netloom-<hash of the checkout's path>", so
two `make run`s on one host share a Redis without taking each other's tasks or joining each
other's run groups. Ctrl-C or SIGTERM stops every child process it started.

It supervises them (`Supervisor`): a child that dies -- a worker, the web tier, the private Redis
-- is started again with a log line, after a back-off that doubles while it keeps dying soon after
its start (1 s, 2 s, 4 s, ... at most 30 s); after QUICK_CRASH_LIMIT such quick deaths in a row it
gives up and stops everything, saying which child and why. The loop is written here rather than
taken from a process manager: honcho (foreman's model) stops all when one child ends and never
restarts, and supervisord is a daemon with its own configuration file and control socket; what
`make run` needs is thirty lines of restart and back-off around the Popen calls it already has.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
PRIVATE_REDIS_PORT = 6390


def redis_reachable(url: str, timeout: float = 0.5) -> bool:
    """True when something accepts TCP connections at the Redis URL's host and port."""
    parsed = urlparse(url)
    try:
        with socket.create_connection(
            (parsed.hostname or "127.0.0.1", parsed.port or 6379), timeout
        ):
            return True
    except OSError:
        return False


def checkout_instance(root: Path = ROOT) -> str:
    """This checkout's default NETLOOM_INSTANCE: one per folder, stable across restarts."""
    return f"netloom-{hashlib.sha1(str(root).encode()).hexdigest()[:8]}"


def cohosted_worker_threads() -> str:
    """NETLOOM_WORKER_THREADS for workers that share this machine's cores with the web tier: the
    environment's when set, else the cores less one (at least 1).

    torch's default, a thread per core, made the iris MLP's trainer spin a second core on waits:
    alone it took 1.35 cores for the speed one thread gives with 0.87, and beside a loaded web tier
    it trained at half one thread's speed while leaving the web a fifth fewer requests/s
    (docs/benchmarks.md "API under load").
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return os.environ.get("NETLOOM_WORKER_THREADS") or str(max(1, cores - 1))


def worker_commands(instance: str) -> list[list[str]]:
    """The Celery workers `make run` starts: training (one run at a time), short jobs and dataset
    processing, each apart."""
    from webapp.queues import DATASETS_QUEUE, SHORT_QUEUE, TRAIN_QUEUE

    def worker(queue: str, concurrency: int) -> list[str]:
        return [
            sys.executable, "-m", "celery", "-A", "webapp.celery", "worker",
            "-Q", queue, "-c", str(concurrency), "-n", f"{queue}-{instance}@%h", "--loglevel", "INFO",
        ]  # fmt: skip

    return [worker(TRAIN_QUEUE, 1), worker(SHORT_QUEUE, 1), worker(DATASETS_QUEUE, 1)]


def model_server_command() -> list[str]:
    """The model server (`python -m serving`): every registry version an alias names, on
    SERVING_PORT, reached through the front at /v2/ (docs/subsystems/serving.md)."""
    return [sys.executable, "-m", "serving"]


def redis_server_path() -> str | None:
    """redis-server's path; installed from Debian first when it is missing and we are root."""
    found = shutil.which("redis-server")
    if found or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    print("no redis-server: installing Debian's (apt-get install redis-server)", flush=True)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": False}
    subprocess.run(["apt-get", "update", "-qq"], **quiet)
    subprocess.run(["apt-get", "install", "-y", "-qq", "redis-server"], **quiet)
    return shutil.which("redis-server")


def web_command(port: int) -> list[str]:
    """The web tier (HTTP and WebSockets on one address), as webapp/serve.py configures it."""
    from webapp.serve import server_command

    return server_command(host="127.0.0.1", port=port)


# The restart policy of the children `make run` keeps alive (docs/reliability.md "Supervised make run").
RESTART_FIRST_DELAY = 1.0
RESTART_MAX_DELAY = 30.0
# A child that dies sooner than this after its start is counted as a crash at start.
QUICK_CRASH_SECONDS = 30.0
QUICK_CRASH_LIMIT = 5


class GaveUp(Exception):
    """A child kept dying soon after its start."""


class Supervised:
    """One child process kept alive: its name, its command, and when it started and died."""

    def __init__(self, name: str, argv: list[str], **popen: Any) -> None:
        self.name, self.argv, self.popen_options = name, argv, popen
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.quick_crashes = 0
        self.restart_at: float | None = None

    def start(self) -> None:
        """Start the command (again)."""
        self.process = subprocess.Popen(self.argv, **self.popen_options)
        self.started_at = time.monotonic()
        self.restart_at = None

    def check(self, now: float) -> None:
        """Schedule a restart of a child that died, with a log line; raise GaveUp after too many quick deaths."""
        if self.process is None or self.restart_at is not None or self.process.poll() is None:
            return
        lived = now - self.started_at
        self.quick_crashes = self.quick_crashes + 1 if lived < QUICK_CRASH_SECONDS else 0
        status = self.process.returncode
        if self.quick_crashes >= QUICK_CRASH_LIMIT:
            raise GaveUp(f"the {self.name} process died {self.quick_crashes} times within {QUICK_CRASH_SECONDS:.0f} s "
                         f"of its start (last status {status}); giving up")
        delay = min(RESTART_MAX_DELAY, RESTART_FIRST_DELAY * 2 ** max(0, self.quick_crashes - 1))
        print(f"make run: the {self.name} process (pid {self.process.pid}) exited with status {status} after "
              f"{lived:.0f} s; restarting it in {delay:.0f} s", flush=True)
        self.restart_at = now + delay

    def restart_if_due(self, now: float) -> None:
        """Start a child whose back-off has passed, with a log line."""
        if self.restart_at is not None and now >= self.restart_at:
            self.start()
            assert self.process is not None
            print(f"make run: restarted the {self.name} process (pid {self.process.pid})", flush=True)


def supervise(children: list[Supervised], *, poll_seconds: float = 0.5) -> None:
    """Keep every child alive until interrupted (KeyboardInterrupt) or one keeps crashing (GaveUp)."""
    while True:
        now = time.monotonic()
        for child in children:
            child.check(now)
            child.restart_if_due(now)
        time.sleep(poll_seconds)


def stop_all(children: list[Supervised], *, grace_seconds: float = 10.0) -> None:
    """SIGTERM every running child (the last started first), then SIGKILL what is left after the grace."""
    running = [child.process for child in reversed(children) if child.process is not None]
    for process in running:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + grace_seconds
    for process in running:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def manage(*args: str) -> None:
    """Run a management command in a child process (fails loudly)."""
    subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, check=True)



def main() -> int:
    """Bring everything up and wait; stop the children on Ctrl-C / SIGTERM."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    os.environ.setdefault("DEBUG", "1")
    # The worker exists here, so uploads answer 202 and are checked on the "datasets" queue (the
    # settings default stays "sync" for deployments without a worker and for unit tests).
    os.environ.setdefault("NETLOOM_DATASET_PROCESSING", "celery")
    instance = os.environ.setdefault("NETLOOM_INSTANCE", checkout_instance())
    # The workers train on the cores the web tier serves from: leave it one.
    os.environ["NETLOOM_WORKER_THREADS"] = cohosted_worker_threads()
    port = int(os.environ.get("PORT", "8000"))
    # The model server's port, read by it and by the front that routes /v2/ to it: beside PORT
    # (8090 for 8000), so two checkouts' `make run` on other PORTs do not collide.
    os.environ.setdefault("SERVING_PORT", str(port + 90))
    children: list[Supervised] = []

    def on_signal(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        manage("migrate", "--noinput")
        manage("collectstatic", "--noinput", "--verbosity", "0")
        manage("demo")
        redis = _private_redis()
        if redis is not None:
            children.append(redis)
        for queue, command in zip(("train", "short", "datasets"), worker_commands(instance), strict=True):
            children.append(Supervised(f"{queue} worker", command, cwd=ROOT))
        children.append(Supervised("model server", model_server_command(), cwd=ROOT))
        web = Supervised("web", web_command(port), cwd=ROOT)
        children.append(web)
        for child in children:
            if child.process is None:
                child.start()
        _wait_for_web(web, port)
        print(
            f"\nNetloom is running at http://127.0.0.1:{port}/  (app: /app/, API docs: /api/docs/)",
            flush=True,
        )
        print(f"Redis key prefix {instance!r} (NETLOOM_INSTANCE); workers: train, short, datasets "
              f"({os.environ['NETLOOM_WORKER_THREADS']} torch thread(s) each, NETLOOM_WORKER_THREADS)", flush=True)
        print(f"models: http://127.0.0.1:{port}/v2/models/<id>-<name>/infer (the model server, "
              f"port {os.environ['SERVING_PORT']})", flush=True)
        print("log in as demo / demo; a process that dies is restarted; Ctrl-C stops everything\n", flush=True)
        supervise(children)
    except KeyboardInterrupt:
        return 0
    except GaveUp as exc:
        print(f"make run: {exc}; stopping everything", file=sys.stderr, flush=True)
        return 1
    except subprocess.CalledProcessError as exc:
        print(f"setup failed: {exc}", file=sys.stderr)
        return exc.returncode or 1
    finally:
        stop_all(children)
    return 0


def _wait_for_web(web: Supervised, port: int) -> None:
    """Until the web tier accepts connections (it imports Django in several processes first)."""
    deadline = time.monotonic() + 120
    while web.process is not None and web.process.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)


def _private_redis() -> Supervised | None:
    """The private Redis to start when none answers at REDIS_URL (started and waited for); else None."""
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    private_url = f"redis://127.0.0.1:{PRIVATE_REDIS_PORT}/0"
    if not redis_reachable(redis_url) and redis_reachable(private_url):
        # Another checkout's `make run` started one: share it (the key prefixes keep us apart).
        os.environ["REDIS_URL"] = private_url
        print(f"using the private Redis at {private_url}", flush=True)
        return None
    if redis_reachable(redis_url):
        return None
    redis_server = redis_server_path()
    if not redis_server:
        print(
            "no Redis at REDIS_URL and no redis-server: install one (apt-get install redis-server) "
            "or set REDIS_URL; live updates and training need it",
            flush=True,
        )
        return None
    os.environ["REDIS_URL"] = private_url
    redis = Supervised("redis", [redis_server, "--port", str(PRIVATE_REDIS_PORT), "--save", "", "--appendonly", "no",
                                 "--daemonize", "no"], stdout=subprocess.DEVNULL)
    redis.start()
    for _ in range(50):
        if redis_reachable(private_url):
            break
        time.sleep(0.1)
    print(f"started a private Redis at {private_url}", flush=True)
    return redis


if __name__ == "__main__":
    sys.exit(main())
