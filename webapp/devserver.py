"""`python -m webapp.devserver` (what `make run` runs): everything on one machine, one command.

Migrates, collects static files, creates the demo login, starts a private Redis when none is
reachable at REDIS_URL, a Celery worker when the Celery app exists, and daphne on
127.0.0.1:$PORT (8000). Uploads are processed by the worker (NETLOOM_DATASET_PROCESSING=celery
unless the environment says otherwise). Ctrl-C or SIGTERM stops every child process it started.
"""

from __future__ import annotations

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


def worker_command() -> list[str]:
    """The Celery worker `make run` starts (one process; training and short jobs)."""
    return [
        sys.executable, "-m", "celery", "-A", "webapp.celery", "worker",
        "-Q", "train,short", "-c", "1", "--loglevel", "INFO",
    ]  # fmt: skip


def web_command(port: int) -> list[str]:
    """The ASGI server (HTTP and WebSockets)."""
    return [
        sys.executable,
        "-m",
        "daphne",
        "-b",
        "127.0.0.1",
        "-p",
        str(port),
        "webapp.asgi:application",
    ]


def manage(*args: str) -> None:
    """Run a management command in a child process (fails loudly)."""
    subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, check=True)



def main() -> int:
    """Bring everything up and wait; stop the children on Ctrl-C / SIGTERM."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    os.environ.setdefault("DEBUG", "1")
    # The worker exists here, so uploads answer 202 and are checked on the "short" queue (the
    # settings default stays "sync" for deployments without a worker and for unit tests).
    os.environ.setdefault("NETLOOM_DATASET_PROCESSING", "celery")
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
        if not redis_reachable(redis_url):
            if shutil.which("redis-server"):
                redis_url = f"redis://127.0.0.1:{PRIVATE_REDIS_PORT}/0"
                os.environ["REDIS_URL"] = redis_url
                children.append(
                    subprocess.Popen(
                        [
                            "redis-server",
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

        children.append(subprocess.Popen(worker_command(), cwd=ROOT))
        children.append(subprocess.Popen(web_command(port), cwd=ROOT))
        print(
            f"\nNetloom is running at http://127.0.0.1:{port}/  (app: /app/, API docs: /api/docs/)",
            flush=True,
        )
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
