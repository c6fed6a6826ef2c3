"""Routes of the jobs API (mounted under /api/ by webapp/urls.py)."""

from django.urls import path

from . import api

jobs = api.JobViewSet.as_view({"get": "list"})
job = api.JobViewSet.as_view({"get": "retrieve"})

urlpatterns = [
    path("jobs/", jobs, name="job-list"),
    path("jobs/<int:pk>/", job, name="job-detail"),
]

# Every route above, with placeholders, for tests/webapp/test_isolation.py (through webapp/urls.py).
API_ROUTES = [
    ("get", "/api/jobs/"),
    ("get", "/api/jobs/{job}/"),
]
