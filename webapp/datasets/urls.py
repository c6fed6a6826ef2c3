"""Routes of the datasets API (mounted under /api/)."""

from django.urls import path

from . import api

datasets = api.DatasetViewSet.as_view({"get": "list", "post": "create"})
dataset = api.DatasetViewSet.as_view(
    {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
)
preview = api.DatasetViewSet.as_view({"get": "preview"})

urlpatterns = [
    path("datasets/", datasets, name="dataset-list"),
    path("datasets/upload/", api.DatasetUploadView.as_view(), name="dataset-upload"),
    path("datasets/builtins/", api.BuiltinListView.as_view(), name="dataset-builtins"),
    path("datasets/<int:pk>/", dataset, name="dataset-detail"),
    path("datasets/<int:pk>/preview/", preview, name="dataset-preview"),
]

# Every route above, with placeholders, for tests/webapp/test_isolation.py.
API_ROUTES = [
    ("get", "/api/datasets/"),
    ("post", "/api/datasets/"),
    ("post", "/api/datasets/upload/"),
    ("get", "/api/datasets/builtins/"),
    ("get", "/api/datasets/{dataset}/"),
    ("patch", "/api/datasets/{dataset}/"),
    ("delete", "/api/datasets/{dataset}/"),
    ("get", "/api/datasets/{dataset}/preview/"),
]
