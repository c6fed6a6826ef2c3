"""Routes of the accounts API (mounted under /api/)."""

from django.urls import path

from . import api

tokens = api.TokenViewSet.as_view({"get": "list", "post": "create"})
token = api.TokenViewSet.as_view({"get": "retrieve", "delete": "destroy"})
teams = api.TeamViewSet.as_view({"get": "list", "post": "create"})
team = api.TeamViewSet.as_view({"get": "retrieve"})

urlpatterns = [
    path("auth/token/", api.TokenObtainView.as_view(), name="auth-token"),
    path("auth/tokens/", tokens, name="auth-tokens"),
    path("auth/tokens/<int:pk>/", token, name="auth-token-detail"),
    path("auth/csrf/", api.CsrfView.as_view(), name="auth-csrf"),
    path("auth/login/", api.LoginView.as_view(), name="auth-login"),
    path("auth/config/", api.AuthConfigView.as_view(), name="auth-config"),
    path("auth/logout/", api.LogoutView.as_view(), name="auth-logout"),
    path("auth/me/", api.MeView.as_view(), name="auth-me"),
    path("teams/", teams, name="team-list"),
    path("teams/<int:pk>/", team, name="team-detail"),
    path("teams/<int:pk>/members/", api.TeamMemberView.as_view(), name="team-members"),
    path(
        "teams/<int:pk>/members/<int:user_id>/",
        api.TeamMemberDetailView.as_view(),
        name="team-member-detail",
    ),
]

# Every route above, with placeholders, for tests/webapp/test_isolation.py.
API_ROUTES = [
    ("get", "/api/auth/tokens/"),
    ("post", "/api/auth/tokens/"),
    ("get", "/api/auth/tokens/{token}/"),
    ("delete", "/api/auth/tokens/{token}/"),
    ("post", "/api/auth/logout/"),
    ("get", "/api/auth/me/"),
    ("get", "/api/teams/"),
    ("post", "/api/teams/"),
    ("get", "/api/teams/{team}/"),
    ("post", "/api/teams/{team}/members/"),
    ("delete", "/api/teams/{team}/members/{member}/"),
]
# Open to anonymous users on purpose.
PUBLIC_ROUTES = [
    ("post", "/api/auth/token/"),
    ("get", "/api/auth/csrf/"),
    ("post", "/api/auth/login/"),
    ("get", "/api/auth/config/"),
]
