"""Routes of the accounts API (mounted under /api/)."""

from django.urls import path

from .api.invitations import (
    InvitationAcceptView,
    InvitationView,
    TeamInvitationDetailView,
    TeamInvitationsView,
)
from .api.members import TeamMemberDetailView, TeamMemberView
from .api.passwords import PasswordChangeView
from .api.session import AuthConfigView, CsrfView, LoginView, LogoutView, MeView
from .api.teams import TeamViewSet
from .api.tokens import TokenObtainView, TokenViewSet

tokens = TokenViewSet.as_view({"get": "list", "post": "create"})
token = TokenViewSet.as_view({"get": "retrieve", "delete": "destroy"})
teams = TeamViewSet.as_view({"get": "list", "post": "create"})
team = TeamViewSet.as_view({"get": "retrieve", "patch": "partial_update"})

urlpatterns = [
    path("auth/token/", TokenObtainView.as_view(), name="auth-token"),
    path("auth/tokens/", tokens, name="auth-tokens"),
    path("auth/tokens/<int:pk>/", token, name="auth-token-detail"),
    path("auth/csrf/", CsrfView.as_view(), name="auth-csrf"),
    path("auth/login/", LoginView.as_view(), name="auth-login"),
    path("auth/config/", AuthConfigView.as_view(), name="auth-config"),
    path("auth/logout/", LogoutView.as_view(), name="auth-logout"),
    path("auth/me/", MeView.as_view(), name="auth-me"),
    path("auth/password/", PasswordChangeView.as_view(), name="auth-password"),
    path("teams/", teams, name="team-list"),
    path("teams/<int:pk>/", team, name="team-detail"),
    path("teams/<int:pk>/members/", TeamMemberView.as_view(), name="team-members"),
    path(
        "teams/<int:pk>/members/<int:user_id>/",
        TeamMemberDetailView.as_view(),
        name="team-member-detail",
    ),
    path("teams/<int:pk>/invitations/", TeamInvitationsView.as_view(), name="team-invitations"),
    path(
        "teams/<int:pk>/invitations/<int:iid>/",
        TeamInvitationDetailView.as_view(),
        name="team-invitation-detail",
    ),
    path("invitations/<str:token>/", InvitationView.as_view(), name="invitation"),
    path("invitations/<str:token>/accept/", InvitationAcceptView.as_view(), name="invitation-accept"),
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
    ("patch", "/api/teams/{team}/"),
    ("post", "/api/teams/{team}/members/"),
    ("patch", "/api/teams/{team}/members/{member}/"),
    ("delete", "/api/teams/{team}/members/{member}/"),
    ("post", "/api/auth/password/"),
    ("get", "/api/teams/{team}/invitations/"),
    ("post", "/api/teams/{team}/invitations/"),
    ("delete", "/api/teams/{team}/invitations/{invitation}/"),
]
# Open to anonymous users on purpose.
PUBLIC_ROUTES = [
    ("post", "/api/auth/token/"),
    ("get", "/api/auth/csrf/"),
    ("post", "/api/auth/login/"),
    # The invitation's secret is the credential (a new account accepts before it exists).
    ("get", "/api/invitations/{invitation_token}/"),
    ("post", "/api/invitations/{invitation_token}/accept/"),
    ("get", "/api/auth/config/"),
]
