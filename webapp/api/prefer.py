"""The `Prefer` request header (RFC 7240) where an endpoint can answer either way.

An endpoint whose work can take a while does it in the request by default and answers 200 with
the result; a client that sends `Prefer: respond-async` gets 202 with the job that does it
(webapp/jobs), a `Location` to poll and `Preference-Applied: respond-async`.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request

PREFER_ASYNC = "respond-async"

PREFER_PARAMETER = OpenApiParameter(
    "Prefer", str, location=OpenApiParameter.HEADER, required=False,
    description='"respond-async": queue the work as a job and answer 202 with it (poll its Location) '
    "instead of doing it in the request (200).",
)  # fmt: skip


def prefers_async(request: Request) -> bool:
    """Whether the request's `Prefer` header asks for an asynchronous answer."""
    header = request.headers.get("Prefer", "")
    return any(token.split(";")[0].strip().lower() == PREFER_ASYNC for token in header.split(","))
