"""URL map: the index page, the browser app under /app/, the REST API under /api/, the admin."""

from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from webapp import health, pages
from webapp.accounts import oidc
from webapp.api.lockout import local_passwords_only, sign_in_throttled
from webapp.jobs.urls import API_ROUTES as JOB_ROUTES

api_patterns = [
    path("", include("webapp.accounts.urls")),
    path("", include("webapp.datasets.urls")),
    path("", include("webapp.graphs.urls")),
    path("", include("webapp.blocks.urls")),
    path("", include("webapp.jobs.urls")),
    path("", include("webapp.registry.urls")),
    path("", include("webapp.audit.urls")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI from drf-spectacular-sidecar's static files: works on a server without internet.
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]

urlpatterns = [
    path("", pages.index, name="index"),
    path("healthz", health.healthz, name="healthz"),  # load balancers, docker-compose: docs/deploy.md
    # Runs first: their detail and metrics are what dashboards poll most (every pattern tried
    # before the one that matches costs each request).
    path("api/", include("webapp.runs.urls")),
    path("api/", include(api_patterns)),
    path("api/", include("webapp.sweeps.urls")),
    # Single sign-on: off to the provider, and back (webapp/accounts/oidc.py; 404 when not set up).
    path("auth/oidc/authenticate/", oidc.OidcAuthenticateView.as_view(), name="oidc_authentication_init"),
    path("auth/oidc/callback/", oidc.OidcCallbackView.as_view(), name="oidc_authentication_callback"),
    # The admin's password form is throttled per address as the API's sign-ins are, and refused
    # with the API's sign-ins when local passwords are off.
    path("admin/login/", local_passwords_only(sign_in_throttled(admin.site.login)), name="admin-login"),
    path("admin/", admin.site.urls),
    re_path(r"^app(?:/(?P<path>.*))?$", pages.app_shell, name="app"),
]

# The jobs app's routes, for tests/webapp/test_isolation.py (it reads each app's list and this one's).
API_ROUTES = JOB_ROUTES

# Open to anonymous users on purpose (the API's own public routes live in each app's urls.py).
PUBLIC_ROUTES = [
    ("get", "/api/schema/"),
    ("get", "/api/docs/"),
]

handler400 = "webapp.api.errors.handler400"
handler404 = "webapp.api.errors.handler404"
handler500 = "webapp.api.errors.handler500"
