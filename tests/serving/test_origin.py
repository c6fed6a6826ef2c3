"""Which Origins may use the browser's session on the model server (serving.server._same_origin)."""

from __future__ import annotations

from typing import Any

import pytest

from serving.server import _cookie, _same_origin

TRUSTED = ["https://app.example.org", "https://*.corp.example"]


def request(origin: str | None, host: str = "netloom.test:8000", cookie: str = "") -> dict[str, Any]:
    headers = [(b"host", host.encode()), (b"cookie", cookie.encode())]
    return {"headers": headers + ([(b"origin", origin.encode())] if origin is not None else [])}


@pytest.mark.parametrize(("origin", "allowed"), [
    (None, True),  # no Origin: no cross-site browser request
    ("http://netloom.test:8000", True),
    ("https://netloom.test:8000", True),  # the front may end TLS
    ("http://netloom.test:9000", False),
    ("http://evil.example", False),
    ("null", False),  # a sandboxed frame or a file: page
    ("https://app.example.org", True),  # CSRF_TRUSTED_ORIGINS
    ("https://team.corp.example", True),
    ("http://team.corp.example", False),
    ("https://evilcorp.example", False),
])
def test_a_session_request_comes_from_this_site_or_a_trusted_origin(origin: str | None, allowed: bool) -> None:
    assert _same_origin(request(origin), TRUSTED) is allowed


def test_the_session_cookie_is_read_among_others() -> None:
    assert _cookie(request(None, cookie="csrftoken=abc; sessionid=k3y; theme=dark"), "sessionid") == "k3y"
    assert _cookie(request(None, cookie="csrftoken=abc; broken; sessionid="), "sessionid") is None
