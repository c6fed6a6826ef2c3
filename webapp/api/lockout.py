"""The answer to a sign-in from a client address that is locked out (django-axes calls it)."""

from __future__ import annotations

import math
from typing import Any

from axes.helpers import get_cool_off
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from webapp.api.errors import error_body


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None, credentials: Any = None
) -> HttpResponse:
    """429 in the API's error body, with Retry-After: the lockout window's length."""
    cool_off = get_cool_off(request)
    seconds = math.ceil(cool_off.total_seconds()) if cool_off else None
    window = f" Try again in {math.ceil(seconds / 60)} minutes." if seconds else ""
    response = JsonResponse(
        error_body(
            "locked_out",
            f"Too many failed sign-ins from this address ({settings.AXES_FAILURE_LIMIT} "
            f"in a row).{window}",
            retry_after=seconds,
        ),
        status=429,
    )
    if seconds:
        response["Retry-After"] = str(seconds)
    return response
