"""URL map: the index page, the browser app under /app/, the REST API under /api/, the admin."""

from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView

from webapp import pages
from webapp.api import docs
from webapp.settings import module_exists

api_patterns = [
    path("", include("webapp.accounts.urls")),
    path("", include("webapp.datasets.urls")),
    path("", include("webapp.graphs.urls")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", docs.ApiDocsView.as_view(), name="api-docs"),
]

urlpatterns = [
    path("", pages.index, name="index"),
    path("api/", include(api_patterns)),
    path("admin/", admin.site.urls),
    re_path(r"^app(?:/(?P<path>.*))?$", pages.app_shell, name="app"),
]

# The runs app is written alongside this one; the project must work before it exists.
if module_exists("webapp.runs.urls"):
    urlpatterns.insert(2, path("api/", include("webapp.runs.urls")))

# Open to anonymous users on purpose (the API's own public routes live in each app's urls.py).
PUBLIC_ROUTES = [
    ("get", "/api/schema/"),
    ("get", "/api/docs/"),
]

handler400 = "webapp.api.errors.handler400"
handler404 = "webapp.api.errors.handler404"
handler500 = "webapp.api.errors.handler500"
