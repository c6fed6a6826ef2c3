"""REST API of runs, one module per resource; the views the URLconf mounts."""

from .catalogs import ConfigSchemaView, ExplanationMethodsView
from .compare import RunCompareView
from .explanations import ExplanationViewSet
from .init_plan import InitPlanView
from .runs import RunViewSet
from .weights import RevisionWeightsView
from .workers import QueueView, WorkerListView

__all__ = [
    "ConfigSchemaView",
    "ExplanationMethodsView",
    "ExplanationViewSet",
    "InitPlanView",
    "QueueView",
    "RevisionWeightsView",
    "RunCompareView",
    "RunViewSet",
    "WorkerListView",
]
