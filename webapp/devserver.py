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
    children: list[subprocess.Popen[bytes]] = []

    def stop(*_: object) -> None:
        for child in reversed(children):
            if child.poll() is None:
                child.terminate()
        deadline = time.monotonic() + 10
        for child in reversed(children):
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()

    def on_signal(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        manage("migrate", "--noinput")
        manage("collectstatic", "--noinput", "--verbosity", "0")
        manage("demo")

        redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
        private_url = f"redis://127.0.0.1:{PRIVATE_REDIS_PORT}/0"
        if not redis_reachable(redis_url) and redis_reachable(private_url):
            # Another checkout's `make run` started one: share it (the key prefixes keep us apart).
            redis_url = os.environ["REDIS_URL"] = private_url
            print(f"using the private Redis at {redis_url}", flush=True)
        if not redis_reachable(redis_url):
            redis_server = redis_server_path()
            if redis_server:
                redis_url = f"redis://127.0.0.1:{PRIVATE_REDIS_PORT}/0"
                os.environ["REDIS_URL"] = redis_url
                children.append(
                    subprocess.Popen(
                        [
                            redis_server,
                            "--port",
                            str(PRIVATE_REDIS_PORT),
                            "--save",
                            "",
                            "--appendonly",
                            "no",
                            "--daemonize",
                            "no",
                        ],
                        stdout=subprocess.DEVNULL,
                    )
                )
                for _ in range(50):
                    if redis_reachable(redis_url):
                        break
                    time.sleep(0.1)
                print(f"started a private Redis at {redis_url}", flush=True)
            else:
                print(
                    "no Redis at REDIS_URL and no redis-server: install one (apt-get install redis-server) "
                    "or set REDIS_URL; live updates and training need it",
                    flush=True,
                )

        for command in worker_commands(instance):
            children.append(subprocess.Popen(command, cwd=ROOT))
        web = subprocess.Popen(web_command(port), cwd=ROOT)
        children.append(web)
        # The URL once it answers: the web tier imports Django in several processes first.
        deadline = time.monotonic() + 120
        while web.poll() is None and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        print(
            f"\nNetloom is running at http://127.0.0.1:{port}/  (app: /app/, API docs: /api/docs/)",
            flush=True,
        )
        print(f"Redis key prefix {instance!r} (NETLOOM_INSTANCE); workers: train, short, datasets "
              f"({os.environ['NETLOOM_WORKER_THREADS']} torch thread(s) each, NETLOOM_WORKER_THREADS)", flush=True)
        print("log in as demo / demo; Ctrl-C stops everything\n", flush=True)
        while True:
            for child in children:
                if child.poll() is not None:
                    print(
                        f"{' '.join(map(str, child.args[:4]))} exited ({child.returncode}); stopping",
                        flush=True,
                    )
                    return child.returncode or 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        return 0
    except subprocess.CalledProcessError as exc:
        print(f"setup failed: {exc}", file=sys.stderr)
        return exc.returncode or 1
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
