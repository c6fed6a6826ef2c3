"""Routes of the sweeps API (mounted under /api/ by webapp/urls.py)."""

from rest_framework.routers import SimpleRouter

from .api import SweepViewSet

router = SimpleRouter()
router.register("sweeps", SweepViewSet, basename="sweep")

urlpatterns = [*router.urls]

# Every route above, with placeholders, for tests/webapp/test_isolation.py.
API_ROUTES = [
    ("get", "/api/sweeps/"),
    ("post", "/api/sweeps/"),
    ("get", "/api/sweeps/{sweep}/"),
    ("post", "/api/sweeps/{sweep}/cancel/"),
]
