"""Routes of the blocks API (mounted under /api/)."""

from django.urls import path

from . import api

blocks = api.BlockViewSet.as_view({"get": "list", "post": "create"})
block = api.BlockViewSet.as_view(
    {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
)
versions = api.BlockVersionViewSet.as_view({"get": "list", "post": "create"})
version = api.BlockVersionViewSet.as_view({"get": "retrieve"})

urlpatterns = [
    path("blocks/", blocks, name="block-list"),
    path("blocks/<int:pk>/", block, name="block-detail"),
    path("blocks/<int:block_pk>/versions/", versions, name="block-versions"),
    path("blocks/<int:block_pk>/versions/<int:number>/", version, name="block-version-detail"),
]

# Every route above, with placeholders, for tests/webapp/test_isolation.py.
API_ROUTES = [
    ("get", "/api/blocks/"),
    ("post", "/api/blocks/"),
    ("get", "/api/blocks/{block}/"),
    ("patch", "/api/blocks/{block}/"),
    ("delete", "/api/blocks/{block}/"),
    ("get", "/api/blocks/{block}/versions/"),
    ("post", "/api/blocks/{block}/versions/"),
    ("get", "/api/blocks/{block}/versions/{block_version}/"),
]
