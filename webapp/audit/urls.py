"""Routes of the audit API (mounted under /api/ by webapp/urls.py); reads only."""

from django.urls import path

from . import api

urlpatterns = [
    path("teams/<int:pk>/audit/", api.TeamAuditView.as_view(), name="team-audit"),
    path("teams/<int:pk>/audit/export/", api.TeamAuditExportView.as_view(), name="team-audit-export"),
]

# Every route above, with placeholders, for tests/webapp/test_isolation.py.
API_ROUTES = [
    ("get", "/api/teams/{team}/audit/"),
    ("get", "/api/teams/{team}/audit/export/"),
]
