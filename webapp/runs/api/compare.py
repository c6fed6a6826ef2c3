"""GET /api/runs/compare/: many runs' series, who each run is, and what differs between them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.errors import ApiError
from webapp.api.serializers import ID_MAX
from webapp.metrics.selectors import runs_metric_series

from ..selectors import (
    runs_compare_rows,
    runs_config_diff,
    runs_graph_diff,
    runs_graph_params_diff,
    runs_visible_to,
)
from .params import metric_query
from .schema import COMPARE_PARAMETERS, CompareAnswer

# A comparison is of 2 to 100 runs ("the top 100 of a sweep"); each run's curves come downsampled
# to `max_points`, so the answer stays a few points per pixel whatever the runs' lengths.
COMPARE_MIN_RUNS = 2

COMPARE_MAX_RUNS = 100


class RunCompareView(APIView):
    """GET /api/runs/compare/?ids=1,2&keys=a,b&max_points=N: many runs' series in one request."""

    @extend_schema(parameters=COMPARE_PARAMETERS, responses=CompareAnswer)
    def get(self, request: Request) -> Response:
        """Series, who each run is, the config fields and graph parameters that differ and the graph changes, in the
        order of `ids`; 404 if one is not yours, 400 naming `ids` unless there are 2 to 100."""
        try:
            ids = list(dict.fromkeys(int(i) for i in request.query_params.get("ids", "").split(",") if i.strip()))
        except ValueError:
            ids = []
        wanted = f"{COMPARE_MIN_RUNS} to {COMPARE_MAX_RUNS} comma-separated run ids"
        if not ids or len(ids) > COMPARE_MAX_RUNS or not all(1 <= i <= ID_MAX for i in ids):
            raise ApiError(400, "invalid", f"ids must be {wanted}.", fields={"ids": [f"{wanted[0].upper()}{wanted[1:]}."]})
        query = metric_query(request)
        runs_of_user = runs_visible_to(user=request.user).select_related(
            "graph_revision__graph", "dataset", "created_by"
        )
        found = {run.pk: run for run in runs_of_user.filter(pk__in=ids)}
        missing = [i for i in ids if i not in found]
        if missing:
            raise ApiError(404, "not_found", f"No run {missing[0]} among your teams' runs.")
        if len(ids) < COMPARE_MIN_RUNS:
            raise ApiError(400, "invalid", f"ids must be {wanted}; a comparison needs at least two runs.",
                           fields={"ids": [f"{wanted[0].upper()}{wanted[1:]}."]})
        runs = [found[i] for i in ids]
        series = runs_metric_series(runs=runs, **query)
        return Response({
            # Each entry keeps the series answer of before ({run, last_seq, series}) beside who the run is.
            "runs": [{**row, **one} for row, one in zip(runs_compare_rows(runs=runs), series, strict=True)],
            "config_diff": runs_config_diff(runs=runs),
            "graph_diff": runs_graph_diff(runs=runs),
            "graph_params_diff": runs_graph_params_diff(runs=runs),
        })
