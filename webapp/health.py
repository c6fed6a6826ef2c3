"""Is this process able to serve? `GET /healthz` and `python -m webapp.health` answer it.

Both check what every Netloom process needs: the database answers a query and Redis (the Celery
broker and channel layer) answers a ping. `GET /healthz` is open to anyone (load balancers and
docker-compose ask it) and says only "ok" or "unavailable" for each part: 200 when both answer,
else 503. Why a part failed goes to the log (and to the command line's output), not to the page.

It also says whether MEDIA_ROOT's volume has room: `"disk": "ok"`, or `"disk": "low"` with
`"status": "degraded"` while less than NETLOOM_DISK_MARGIN_BYTES is free (webapp/disk.py). Still
200: the service serves reads, and refuses what would not fit with 507 `insufficient_storage`.

    python -m webapp.health                 the same checks from the command line (exit 0 or 1)
    python -m webapp.health --url URL       ask a running server's /healthz over HTTP instead

The `--url` form sends the Host header of the first ALLOWED_HOSTS entry and
`X-Forwarded-Proto: https`, so a server with DEBUG off answers it as it answers a browser behind
the TLS proxy (docker-compose.yml's web health check). It never follows a redirect.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe

logger = logging.getLogger(__name__)
CHECK_TIMEOUT_SECONDS = 2.0


def check_database() -> str:
    """The answer "ok", or why the default database did not answer `SELECT 1`."""
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any driver error means "not healthy", never a 500
        return f"{type(exc).__name__}: {exc}".strip()
    return "ok"


def check_redis() -> str:
    """The answer "ok", or why Redis at REDIS_URL did not answer a ping."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(
        settings.REDIS_URL,
        socket_timeout=CHECK_TIMEOUT_SECONDS,
        socket_connect_timeout=CHECK_TIMEOUT_SECONDS,
    )
    try:
        client.ping()
    except Exception as exc:  # connection refused, timeout, auth: all "not healthy"
        return f"{type(exc).__name__}: {exc}".strip()
    finally:
        client.close()
    return "ok"


def check_disk() -> str:
    """"ok", or "low" while MEDIA_ROOT's volume has less than the margin free (the figures go to the log)."""
    from webapp.disk import disk_margin, free_bytes, space_is_low, volume_of

    try:
        if space_is_low():
            logger.warning("health check: the volume %s has %d bytes free, below the margin %d",
                           volume_of(), free_bytes(), disk_margin())
            return "low"
    except OSError as exc:
        logger.warning("health check: MEDIA_ROOT's free space unknown: %s", exc)
        return "unknown"
    return "ok"


def health() -> dict[str, str]:
    """Each part's answer: {"database": "ok", "redis": "ok"} when all is well."""
    return {"database": check_database(), "redis": check_redis()}


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """`GET /healthz`: 200 {"status": "ok", ...} or 503 naming the part that failed."""
    parts = health()
    for part, answer in parts.items():
        if answer != "ok":
            logger.warning("health check: %s: %s", part, answer)
    healthy = all(answer == "ok" for answer in parts.values())
    disk = check_disk()
    body = {"status": "unavailable" if not healthy else "ok" if disk == "ok" else "degraded"}
    body.update({part: "ok" if answer == "ok" else "unavailable" for part, answer in parts.items()})
    body["disk"] = disk
    response = JsonResponse(body, status=200 if healthy else 503)
    response["Cache-Control"] = "no-store"
    return response


def _first_allowed_host() -> str:
    """The Host header the `--url` check sends: the first ALLOWED_HOSTS entry, else localhost."""
    for host in os.environ.get("ALLOWED_HOSTS", "").split(","):
        host = host.strip().lstrip(".")
        if host and host != "*":
            return host
    return "localhost"


def check_url(url: str) -> tuple[bool, str]:
    """(healthy, what the server said) for a running server's health URL."""
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None  # a redirect is an answer to report, not one to follow

    request = urllib.request.Request(
        url, headers={"Host": _first_allowed_host(), "X-Forwarded-Proto": "https"}
    )
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=5) as response:
            return (
                response.status == 200,
                f"{response.status} {response.read(500).decode(errors='replace')}",
            )
    except urllib.error.HTTPError as exc:
        detail = exc.read(500).decode(errors="replace")
        if exc.code in (301, 302, 307, 308):
            detail = (
                f"redirected to {exc.headers.get('Location')} (SECURE_SSL_REDIRECT is on and "
                "the proxy header is not trusted: set NETLOOM_BEHIND_TLS_PROXY=1)"
            )
        return False, f"{exc.code} {detail}"
    except OSError as exc:
        return False, f"{type(exc).__name__}: {exc}"


def main(argv: list[str] | None = None) -> int:
    """Run the checks (or ask `--url`); print the answer; 0 when healthy."""
    parser = argparse.ArgumentParser(
        prog="python -m webapp.health", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--url", help="ask this running server's /healthz instead of checking here")
    args = parser.parse_args(argv)
    if args.url:
        healthy, said = check_url(args.url)
        print(said)
        return 0 if healthy else 1
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    parts = health()
    for part, answer in {**parts, "disk": check_disk()}.items():
        print(f"{part}: {answer}")
    return 0 if all(answer == "ok" for answer in parts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
