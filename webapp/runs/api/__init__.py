"""REST API of runs, one module per resource; the views the URLconf mounts."""

from .catalogs import ConfigSchemaView, ExplanationMethodsView
from .compare import RunCompareView
from .explanations import ExplanationViewSet
from .init_plan import InitPlanView
from .runs import RunViewSet
from .views import RunViewViewSet
from .weights import GraphImportView, RevisionWeightsView
from .workers import QueueView, WorkerListView

__all__ = [
    "ConfigSchemaView",
    "ExplanationMethodsView",
    "ExplanationViewSet",
    "GraphImportView",
    "InitPlanView",
    "QueueView",
    "RevisionWeightsView",
    "RunCompareView",
    "RunViewSet",
    "RunViewViewSet",
    "WorkerListView",
]
