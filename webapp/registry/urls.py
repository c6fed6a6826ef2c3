"""Routes of the registry API (mounted under /api/ by webapp/urls.py)."""

from django.urls import path

from webapp.api.renderers import FileFormatNegotiation

from .api import DatasetVersionLineageView, RunLineageView
from .api import RegisteredModelViewSet as V

urlpatterns = [
    path("models/", V.as_view({"get": "list", "post": "create"}), name="model-list"),
    path("models/<int:pk>/", V.as_view({"get": "retrieve"}), name="model-detail"),
    path("models/<int:pk>/versions/", V.as_view({"get": "versions_list", "post": "versions_create"}),
         name="model-versions"),
    path("models/<int:pk>/versions/<int:number>/", V.as_view({"get": "version_retrieve"}),
         name="model-version-detail"),
    path("models/<int:pk>/versions/<int:number>/download/",
         V.as_view({"get": "version_download"}, content_negotiation_class=FileFormatNegotiation),
         name="model-version-download"),
    path("models/<int:pk>/versions/<int:number>/formats/", V.as_view({"post": "version_formats"}),
         name="model-version-formats"),
    path("models/<int:pk>/versions/<int:number>/kserve/",
         V.as_view({"get": "version_kserve"}, content_negotiation_class=FileFormatNegotiation),
         name="model-version-kserve"),
    path("models/<int:pk>/aliases/<str:alias>/", V.as_view({"put": "alias_put", "delete": "alias_delete"}),
         name="model-alias"),
    path("models/<int:pk>/versions/<int:number>/lineage/", V.as_view({"get": "version_lineage"}),
         name="model-version-lineage"),
    # A run's lineage reaches model versions and aliases: served here, where those live.
    path("runs/<int:pk>/lineage/", RunLineageView.as_view(), name="run-lineage"),
    path("datasets/<int:pk>/versions/<int:number>/lineage/", DatasetVersionLineageView.as_view(),
         name="dataset-version-lineage"),
    path("models/<int:pk>/approvals/", V.as_view({"get": "approvals_list"}), name="model-approvals"),
    path("models/<int:pk>/approvals/<int:approval>/approve/", V.as_view({"post": "approval_approve"}),
         name="model-approval-approve"),
    path("models/<int:pk>/approvals/<int:approval>/reject/", V.as_view({"post": "approval_reject"}),
         name="model-approval-reject"),
]

# Every route above, with placeholders, for tests/webapp/test_isolation.py.
API_ROUTES = [
    ("get", "/api/models/"),
    ("post", "/api/models/"),
    ("get", "/api/models/{model}/"),
    ("get", "/api/models/{model}/versions/"),
    ("post", "/api/models/{model}/versions/"),
    ("get", "/api/models/{model}/versions/{model_version}/"),
    ("get", "/api/models/{model}/versions/{model_version}/download/?format=safetensors"),
    ("post", "/api/models/{model}/versions/{model_version}/formats/"),
    ("get", "/api/models/{model}/versions/{model_version}/kserve/"),
    ("put", "/api/models/{model}/aliases/{alias}/"),
    ("delete", "/api/models/{model}/aliases/{alias}/"),
    ("get", "/api/models/{model}/versions/{model_version}/lineage/"),
    ("get", "/api/runs/{run}/lineage/"),
    ("get", "/api/datasets/{dataset}/versions/{dataset_version}/lineage/"),
    ("get", "/api/models/{model}/approvals/"),
    ("post", "/api/models/{model}/approvals/{approval}/approve/"),
    ("post", "/api/models/{model}/approvals/{approval}/reject/"),
]
