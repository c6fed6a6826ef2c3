"""Routes of the graphs API (mounted under /api/)."""

from django.urls import path

from . import api

graphs = api.GraphViewSet.as_view({"get": "list", "post": "create"})
graph = api.GraphViewSet.as_view(
    {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
)
graph_diff = api.GraphViewSet.as_view({"get": "diff"})
graph_collab = api.GraphViewSet.as_view({"get": "collab"})
graph_collab_save = api.GraphViewSet.as_view({"post": "collab_save"})
revisions = api.RevisionViewSet.as_view({"get": "list", "post": "create"})
revision = api.RevisionViewSet.as_view({"get": "retrieve", "patch": "partial_update"})
revision_code = api.RevisionViewSet.as_view({"get": "code"})

urlpatterns = [
    path("graphs/", graphs, name="graph-list"),
    path("graphs/validate/", api.ValidateView.as_view(), name="graph-validate"),
    path("graphs/codegen/", api.CodegenView.as_view(), name="graph-codegen"),
    path("graphs/<int:pk>/", graph, name="graph-detail"),
    path("graphs/<int:pk>/diff/", graph_diff, name="graph-diff"),
    path("graphs/<int:pk>/collab/", graph_collab, name="graph-collab"),
    path("graphs/<int:pk>/collab/save/", graph_collab_save, name="graph-collab-save"),
    path("graphs/<int:graph_pk>/revisions/", revisions, name="graph-revisions"),
    path("graphs/<int:graph_pk>/revisions/<int:number>/", revision, name="graph-revision-detail"),
    path(
        "graphs/<int:graph_pk>/revisions/<int:number>/code/",
        revision_code,
        name="graph-revision-code",
    ),
    path("ops/", api.OpsView.as_view(), name="ops"),
]

# Every route above, with placeholders, for tests/webapp/test_isolation.py.
API_ROUTES = [
    ("get", "/api/graphs/"),
    ("post", "/api/graphs/"),
    ("post", "/api/graphs/validate/"),
    ("post", "/api/graphs/codegen/"),
    ("get", "/api/graphs/{graph}/"),
    ("patch", "/api/graphs/{graph}/"),
    ("delete", "/api/graphs/{graph}/"),
    ("get", "/api/graphs/{graph}/diff/?from={revision}&to={revision}"),
    ("get", "/api/graphs/{graph}/collab/"),
    ("post", "/api/graphs/{graph}/collab/save/"),
    ("get", "/api/graphs/{graph}/revisions/"),
    ("post", "/api/graphs/{graph}/revisions/"),
    ("get", "/api/graphs/{graph}/revisions/{revision}/"),
    ("patch", "/api/graphs/{graph}/revisions/{revision}/"),
    ("get", "/api/graphs/{graph}/revisions/{revision}/code/"),
    ("get", "/api/ops/"),
]
