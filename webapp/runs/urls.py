"""Routes of the runs API (mounted under /api/ by webapp/urls.py)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from .api import (
    ConfigSchemaView,
    ExplanationMethodsView,
    ExplanationViewSet,
    GraphImportView,
    InitPlanView,
    QueueView,
    RevisionWeightsView,
    RunCompareView,
    RunViewSet,
    RunViewViewSet,
    WorkerListView,
)

router = SimpleRouter()
router.register("runs", RunViewSet, basename="run")
router.register("explanations", ExplanationViewSet, basename="explanation")
router.register("run-views", RunViewViewSet, basename="run-view")

# Before the router's: its detail routes would take "config-schema" and "methods" for ids.
urlpatterns = [
    path("runs/config-schema/", ConfigSchemaView.as_view(), name="run-config-schema"),
    path("runs/compare/", RunCompareView.as_view(), name="run-compare"),
    path("runs/init-plan/", InitPlanView.as_view(), name="run-init-plan"),
    path("explanations/methods/", ExplanationMethodsView.as_view(), name="explanation-methods"),
    path("workers/", WorkerListView.as_view(), name="worker-list"),
    path("queue/", QueueView.as_view(), name="queue"),
    # Served by the runs app (it records a run), under the revision it belongs to.
    path("graphs/<int:graph_pk>/revisions/<int:number>/weights/", RevisionWeightsView.as_view(),
         name="graph-revision-weights"),
    path("graphs/import/", GraphImportView.as_view(), name="graph-import"),
    *router.urls,
]

# Every route above, with placeholders, for tests/webapp/test_isolation.py.
API_ROUTES = [
    ("get", "/api/runs/"),
    ("post", "/api/runs/"),
    ("get", "/api/runs/{run}/"),
    ("patch", "/api/runs/{run}/"),
    ("post", "/api/runs/{run}/cancel/"),
    ("post", "/api/runs/{run}/reproduce/"),
    ("get", "/api/runs/{run}/metrics/"),
    ("get", "/api/runs/compare/?ids={run}"),
    ("get", "/api/runs/columns/"),
    ("get", "/api/runs/{run}/checkpoints/"),
    ("get", "/api/runs/{run}/checkpoints/{checkpoint}/export/?format=safetensors"),
    ("get", "/api/runs/{run}/explanations/"),
    ("post", "/api/runs/{run}/explanations/"),
    ("get", "/api/runs/{run}/export/?format=safetensors"),
    ("post", "/api/runs/{run}/predict/"),
    ("get", "/api/runs/{run}/evaluation/"),
    ("post", "/api/runs/{run}/evaluation/"),
    ("get", "/api/runs/{run}/samples/{split}/"),
    ("get", "/api/runs/{run}/samples/{split}/{index}/"),
    ("get", "/api/explanations/{explanation}/"),
    ("get", "/api/explanations/{explanation}/image/"),
    # Engine catalogs: any signed-in user, no team data (like /api/ops/).
    ("get", "/api/runs/config-schema/"),
    # Any signed-in user; a source run of another team is a 404 inside (tests/webapp/runs/test_experiments_*).
    ("post", "/api/runs/init-plan/"),
    ("get", "/api/explanations/methods/"),
    # Any signed-in user; another team's current run is null inside (tests/webapp/runs/test_workers_api.py).
    ("get", "/api/workers/"),
    # Any signed-in user; only the runs of the user's own teams are listed.
    ("get", "/api/queue/"),
    ("post", "/api/graphs/{graph}/revisions/{revision}/weights/"),
    ("get", "/api/run-views/"),
    ("post", "/api/run-views/"),
    ("get", "/api/run-views/{run_view}/"),
    ("patch", "/api/run-views/{run_view}/"),
    ("delete", "/api/run-views/{run_view}/"),
    ("post", "/api/graphs/import/"),
]
