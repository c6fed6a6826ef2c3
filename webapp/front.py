"""What the front (nginx, webapp/serve.py) tells the HTTP server behind it, beside the request.

A module of its own, imported by webapp/wsgi.py, which reads what the front wrote, and by the code
that uses it (webapp/runs/api.py), with nothing of either's.
"""

from __future__ import annotations

import re

# When the front received a request: the environ key webapp/wsgi.py sets from the header the front
# writes over whatever a client sent (X-Netloom-Received: nginx's $msec, webapp/serve.py). Seconds
# since the epoch as a float; absent when no front stamped it (uvicorn alone, a test's client). Not an
# HTTP_ key, so no header of a client's can set it. webapp/runs/detail.py answers a kept read from
# a check made after the request came in (its entry in docs/architecture.md).
RECEIVED = "netloom.received"
RECEIVED_HEADER = "HTTP_X_NETLOOM_RECEIVED"
_MSEC = re.compile(r"[0-9]{1,12}\.[0-9]{3}")


def received_stamp(value: object) -> float | None:
    """The front's stamp ("1764892800.123", $msec) in seconds, None when absent or not one."""
    return float(value) if isinstance(value, str) and _MSEC.fullmatch(value) else None
