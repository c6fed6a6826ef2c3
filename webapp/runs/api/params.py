"""Request parsing shared by the runs API's views: integer query parameters, the metric window, downloads' ?format=."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request

from webapp.api.errors import ApiError
from webapp.api.serializers import ID_MAX


def _query_int(request: Request, name: str, *, least: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    try:
        number = int(raw)
    except ValueError:
        number = None
    if number is None or (least is not None and number < least) or abs(number) > ID_MAX:
        what = "an integer" if least is None else f"an integer of at least {least}"
        raise ApiError(400, "invalid", f"{name} must be {what}.", fields={name: [f"{what[0].upper()}{what[1:]}."]})
    return number


def metric_query(request: Request) -> dict[str, Any]:
    """`?keys=a,b&max_points=N&from_step=&to_step=` as run_metric_series' keyword arguments."""
    keys = [k for k in request.query_params.get("keys", "").split(",") if k.strip()]
    return {
        "keys": keys or None,
        "max_points": _query_int(request, "max_points", least=2),
        "from_step": _query_int(request, "from_step"),
        "to_step": _query_int(request, "to_step"),
    }
