"""Routes of the runs API (mounted under /api/ by webapp/urls.py)."""

from rest_framework.routers import SimpleRouter

from .api import ExplanationViewSet, RunViewSet

router = SimpleRouter()
router.register("runs", RunViewSet, basename="run")
router.register("explanations", ExplanationViewSet, basename="explanation")

urlpatterns = router.urls

# Every route above, with placeholders, for tests/webapp/test_isolation.py.
API_ROUTES = [
    ("get", "/api/runs/"),
    ("post", "/api/runs/"),
    ("get", "/api/runs/{run}/"),
    ("post", "/api/runs/{run}/cancel/"),
    ("get", "/api/runs/{run}/metrics/"),
    ("get", "/api/runs/{run}/checkpoints/"),
    ("get", "/api/runs/{run}/explanations/"),
    ("post", "/api/runs/{run}/explanations/"),
    ("get", "/api/runs/{run}/export/?format=safetensors"),
    ("get", "/api/explanations/{explanation}/"),
    ("get", "/api/explanations/{explanation}/image/"),
]
