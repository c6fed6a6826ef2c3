"""Routes of the datasets API (mounted under /api/)."""

from django.urls import path
from rest_framework.parsers import MultiPartParser

from . import api

datasets = api.DatasetViewSet.as_view({"get": "list", "post": "create"})
dataset = api.DatasetViewSet.as_view(
    {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
)
preview = api.DatasetViewSet.as_view({"get": "preview"})
versions = api.DatasetViewSet.as_view(
    {"get": "versions", "post": "versions"}, parser_classes=[MultiPartParser], pagination_class=None
)
version = api.DatasetViewSet.as_view({"get": "version", "delete": "version"})
versions_diff = api.DatasetViewSet.as_view({"get": "versions_diff"})

urlpatterns = [
    path("datasets/", datasets, name="dataset-list"),
    path("datasets/upload/", api.DatasetUploadView.as_view(), name="dataset-upload"),
    path("datasets/builtins/", api.BuiltinListView.as_view(), name="dataset-builtins"),
    path("datasets/<int:pk>/", dataset, name="dataset-detail"),
    path("datasets/<int:pk>/preview/", preview, name="dataset-preview"),
    path("datasets/<int:pk>/versions/", versions, name="dataset-versions"),
    path("datasets/<int:pk>/versions/diff/", versions_diff, name="dataset-versions-diff"),
    path("datasets/<int:pk>/versions/<int:number>/", version, name="dataset-version"),
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
    ("get", "/api/datasets/{dataset}/versions/"),
    ("post", "/api/datasets/{dataset}/versions/"),
    ("get", "/api/datasets/{dataset}/versions/{dataset_version}/"),
    ("delete", "/api/datasets/{dataset}/versions/{dataset_version}/"),
    ("get", "/api/datasets/{dataset}/versions/diff/?from={dataset_version}&to={dataset_version}"),
]
