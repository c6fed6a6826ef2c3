"""REST API for accounts: tokens, browser login, the current user, teams and members."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import (
    authenticate,
    get_user_model,
    login,
    logout,
    update_session_auth_hash,
)
from django.contrib.auth.signals import user_logged_in
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import exceptions, generics, mixins, serializers, status, viewsets
from rest_framework.authentication import CSRFCheck
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.errors import ApiError
from webapp.api.lockout import SIGN_IN_SCOPE, SignInRateThrottle, password_sign_in_off_message
from webapp.api.mixins import TeamScopedMixin
from webapp.api.serializers import ColumnBounds, KnownFieldsOnly, NameField, StrictSerializer

from .models import ApiToken, Invitation, Membership, Role, Team, TokenScope
from .selectors import (
    invitation_for_secret,
    invitations_pending,
    memberships_for_user,
    role_in_team,
    teams_for_user,
    token_team_id,
)
from .services.invitations import (
    GONE_REASONS,
    invitation_accept,
    invitation_create,
    invitation_revoke,
)
from .services.memberships import membership_add, membership_remove, membership_role_set
from .services.teams import team_create, team_update
from .services.tokens import MAX_TOKEN_DAYS, token_create, token_revoke
from .services.users import user_password_change

User = get_user_model()


# --- serializers ---------------------------------------------------------------------------


class CredentialsSerializer(StrictSerializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=512, trim_whitespace=False)


@extend_schema_field({"oneOf": [{"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
                               {"type": "string", "maxLength": 100}], "nullable": True})
class TeamRefField(serializers.Field):
    """A team by id (`3`, `"3"`) or by name (`"Vision"`); the service checks it is the user's."""

    def to_internal_value(self, data: Any) -> int | str:
        if isinstance(data, bool) or not isinstance(data, int | str):
            raise serializers.ValidationError("A team id or name.")
        if isinstance(data, str) and not 0 < len(data.strip()) <= 100:
            raise serializers.ValidationError("A team id or name.")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class TokenOptionsSerializer(StrictSerializer):
    """What a new token may do and for how long (both token-creating routes take these)."""

    name = NameField(max_length=100, required=False, allow_blank=True, default="")
    expires_in_days = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_TOKEN_DAYS
    )
    expires_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="When the token stops signing in (in the future)."
    )
    scope = serializers.ChoiceField(
        choices=TokenScope.choices, default=TokenScope.WRITE,
        help_text="read: GET, streams and inference only; write: whatever your roles allow.",
    )
    team = TeamRefField(
        required=False, allow_null=True, help_text="Bind the token to one of your teams (id or name)."
    )


class TokenRequestSerializer(CredentialsSerializer, TokenOptionsSerializer):
    pass


class TokenCreateSerializer(TokenOptionsSerializer):
    pass


def _token_options(data: dict[str, Any]) -> dict[str, Any]:
    """token_create's keyword arguments from a validated TokenOptionsSerializer."""
    return {
        "name": data.get("name", ""),
        "expires_in_days": data.get("expires_in_days"),
        "expires_at": data.get("expires_at"),
        "scope": data.get("scope", TokenScope.WRITE),
        "team": data.get("team"),
    }


class ApiTokenSerializer(serializers.ModelSerializer):
    team_name = serializers.CharField(source="team.name", read_only=True, allow_null=True, default=None)

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "scope", "team", "team_name", "created_at", "expires_at",
                  "last_used_at", "revoked_at"]
        read_only_fields = fields


class NewTokenSerializer(ApiTokenSerializer):
    token = serializers.CharField(help_text="The secret; shown only in this response.")

    class Meta(ApiTokenSerializer.Meta):
        fields = ["token", *ApiTokenSerializer.Meta.fields]
        read_only_fields = fields


class UserTeamSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=Role.choices)


class MeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    teams = UserTeamSerializer(many=True)


class MemberSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="user.id")
    username = serializers.CharField(source="user.username")
    role = serializers.ChoiceField(choices=Role.choices)


class TeamSerializer(KnownFieldsOnly, ColumnBounds, serializers.ModelSerializer):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Team
        # The limits are set by site admins (Django admin); team members only read them. Team
        # admins change `production_needs_approval` with PATCH.
        fields = ["id", "name", "role", "created_at", "max_concurrent_runs", "max_devices_per_run",
                  "production_needs_approval"]
        read_only_fields = ["id", "role", "created_at", "max_concurrent_runs", "max_devices_per_run",
                            "production_needs_approval"]

    def get_role(self, team: Team) -> str | None:
        return role_in_team(user=self.context["request"].user, team=team)


class TeamDetailSerializer(TeamSerializer):
    members = serializers.SerializerMethodField()

    class Meta(TeamSerializer.Meta):
        fields = [*TeamSerializer.Meta.fields, "members"]
        read_only_fields = [*TeamSerializer.Meta.read_only_fields, "members"]

    @extend_schema_field(MemberSerializer(many=True))
    def get_members(self, team: Team) -> list[dict[str, Any]]:
        memberships = team.memberships.select_related("user").order_by("user__username")
        return MemberSerializer(memberships, many=True).data


class TeamUpdateSerializer(StrictSerializer):
    production_needs_approval = serializers.BooleanField(
        required=False, help_text="Moving production (of the team's models) needs a second admin's approval."
    )


class MemberAddSerializer(StrictSerializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices, default=Role.VIEWER)


class MemberRoleSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=Role.choices)


class InvitationCreateSerializer(StrictSerializer):
    email = serializers.EmailField(required=False, allow_blank=True, default="")
    username = serializers.CharField(max_length=150, required=False, allow_blank=True, default="")
    role = serializers.ChoiceField(choices=Role.choices, default=Role.VIEWER)


class InvitationSerializer(serializers.ModelSerializer):
    state = serializers.CharField(help_text="pending, accepted, revoked or expired")
    invited_by = serializers.SerializerMethodField()

    class Meta:
        model = Invitation
        fields = ["id", "email", "username", "role", "state", "invited_by", "created_at", "expires_at"]
        read_only_fields = fields

    def get_invited_by(self, invitation: Invitation) -> str | None:
        return invitation.invited_by.get_username() if invitation.invited_by else None


class NewInvitationSerializer(InvitationSerializer):
    token = serializers.CharField(help_text="The secret of the accept link; shown only in this response.")
    url = serializers.CharField(help_text="The accept page's address (the link to share).")
    mailed = serializers.BooleanField(help_text="Whether a mail with the link was sent.")

    class Meta(InvitationSerializer.Meta):
        fields = ["token", "url", "mailed", *InvitationSerializer.Meta.fields]
        read_only_fields = fields


class InvitationTeamSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class InvitationPublicSerializer(serializers.Serializer):
    """What the accept page shows about an invitation (anyone with the link may read it)."""

    team = InvitationTeamSerializer()
    role = serializers.ChoiceField(choices=Role.choices)
    invited_by = serializers.CharField(allow_null=True)
    email = serializers.CharField()
    username = serializers.CharField()
    expires_at = serializers.DateTimeField()
    state = serializers.CharField(help_text="pending, accepted, revoked or expired")
    valid = serializers.BooleanField(help_text="Whether it can still be accepted.")
    reason = serializers.CharField(allow_null=True, help_text="Why it cannot, when it cannot.")


class InvitationAcceptSerializer(StrictSerializer):
    """Empty for the signed-in user; a username and password create a new account."""

    username = serializers.CharField(max_length=150, required=False, allow_blank=True, default="")
    password = serializers.CharField(max_length=512, required=False, allow_blank=True, default="",
                                     trim_whitespace=False)


class AcceptedSerializer(serializers.Serializer):
    team = InvitationTeamSerializer()
    role = serializers.ChoiceField(choices=Role.choices)
    user = inline_serializer("AcceptedUser", {"id": serializers.IntegerField(),
                                              "username": serializers.CharField()})


class PasswordChangeSerializer(StrictSerializer):
    old_password = serializers.CharField(max_length=512, trim_whitespace=False)
    new_password = serializers.CharField(max_length=512, trim_whitespace=False)


def me_payload(user: Any) -> dict[str, Any]:
    """The current user with their teams and roles (GET /api/auth/me/)."""
    return {
        "id": user.pk,
        "username": user.get_username(),
        "teams": [
            {"id": m.team_id, "name": m.team.name, "role": m.role}
            for m in memberships_for_user(user=user)
        ],
    }


def _require_local_passwords() -> None:
    """403 `password_sign_in_off`, naming SSO, while NETLOOM_LOCAL_PASSWORDS is off."""
    if not settings.NETLOOM_LOCAL_PASSWORDS:
        raise ApiError(status.HTTP_403_FORBIDDEN, "password_sign_in_off", password_sign_in_off_message())


def _check_credentials(request: Request, data: dict[str, Any]) -> Any:
    user = authenticate(request._request, username=data["username"], password=data["password"])
    if user is None or not user.is_active:
        raise ApiError(
            status.HTTP_400_BAD_REQUEST,
            "invalid_credentials",
            "Unknown username or wrong password.",
        )
    return user


# --- tokens -------------------------------------------------------------------------------


class TokenObtainView(APIView):
    """POST /api/auth/token/: exchange a username and password for a new API token."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    # Password attempts per client address: slowed past NETLOOM_SIGN_IN_RATE, never locked.
    throttle_classes = [SignInRateThrottle]
    throttle_scope = SIGN_IN_SCOPE

    @extend_schema(request=TokenRequestSerializer, responses={201: NewTokenSerializer})
    def post(self, request: Request) -> Response:
        _require_local_passwords()
        payload = TokenRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        user = _check_credentials(request, payload.validated_data)
        # A token sign-in is a sign-in: last_login moves and the failure count (django-axes)
        # starts again, as a session login does through login().
        user_logged_in.send(sender=type(user), request=request._request, user=user)
        token, raw = token_create(user=user, **_token_options(payload.validated_data))
        token.token = raw  # type: ignore[attr-defined]
        return Response(NewTokenSerializer(token).data, status=status.HTTP_201_CREATED)


class TokenViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """The user's own API tokens: list, create (plaintext shown once), revoke."""

    serializer_class = ApiTokenSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        tokens = ApiToken.objects.filter(user=self.request.user).select_related("team")
        bound = token_team_id(self.request.user)  # a team-bound token sees its team's tokens only
        return tokens if bound is None else tokens.filter(team_id=bound)

    @extend_schema(request=TokenCreateSerializer, responses={201: NewTokenSerializer})
    def create(self, request: Request) -> Response:
        payload = TokenCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        token, raw = token_create(user=request.user, **_token_options(payload.validated_data))
        token.token = raw  # type: ignore[attr-defined]
        return Response(NewTokenSerializer(token).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: ApiToken) -> None:
        token_revoke(token=instance, actor=self.request.user)


# --- browser session ----------------------------------------------------------------------


class CsrfView(APIView):
    """GET /api/auth/csrf/: sets the csrftoken cookie the browser app sends back."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(responses=inline_serializer("Csrf", {"csrf_token": serializers.CharField()}))
    def get(self, request: Request) -> Response:
        return Response({"csrf_token": get_token(request._request)})


class LoginView(APIView):
    """POST /api/auth/login/: start a browser session (needs the CSRF token like any form)."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    # Password attempts per client address: slowed past NETLOOM_SIGN_IN_RATE, never locked.
    throttle_classes = [SignInRateThrottle]
    throttle_scope = SIGN_IN_SCOPE

    @extend_schema(request=CredentialsSerializer, responses=MeSerializer)
    def post(self, request: Request) -> Response:
        # DRF exempts API views from CSRF; a login form must not be (login CSRF).
        check = CSRFCheck(lambda req: None)
        check.process_request(request._request)
        reason = check.process_view(request._request, None, (), {})
        if reason:
            raise exceptions.PermissionDenied(f"CSRF failed: {reason}")
        _require_local_passwords()
        payload = CredentialsSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        user = _check_credentials(request, payload.validated_data)
        login(request._request, user)
        return Response(me_payload(user))


class SsoConfigSerializer(serializers.Serializer):
    name = serializers.CharField(help_text='The button\'s "Sign in with <name>".')
    login_url = serializers.CharField(help_text="Where the browser goes to sign in (add ?next=<path>).")


class AuthConfigSerializer(serializers.Serializer):
    password_sign_in = serializers.BooleanField(help_text="The username and password form works.")
    sso = SsoConfigSerializer(allow_null=True, help_text="Single sign-on, when set up.")


class AuthConfigView(APIView):
    """GET /api/auth/config/: how one signs in here (the sign-in page draws itself from it)."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(responses=AuthConfigSerializer)
    def get(self, request: Request) -> Response:
        sso = None
        if settings.NETLOOM_OIDC_ENABLED:
            sso = {"name": settings.NETLOOM_OIDC_NAME, "login_url": reverse("oidc_authentication_init")}
        return Response({"password_sign_in": settings.NETLOOM_LOCAL_PASSWORDS, "sso": sso})


class LogoutView(APIView):
    """POST /api/auth/logout/: end the browser session."""

    @extend_schema(request=None, responses={204: None})
    def post(self, request: Request) -> Response:
        logout(request._request)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PasswordChangeView(APIView):
    """POST /api/auth/password/: change the signed-in user's password.

    This session stays signed in (update_session_auth_hash); the user's other sessions end;
    API tokens stay valid (revoke them on the profile page).
    """

    # A wrong old password is a password guess: counted like a sign-in per client address.
    throttle_classes = [SignInRateThrottle]
    throttle_scope = SIGN_IN_SCOPE

    @extend_schema(request=PasswordChangeSerializer, responses={204: None})
    def post(self, request: Request) -> Response:
        payload = PasswordChangeSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        user_password_change(
            user=request.user,
            old_password=payload.validated_data["old_password"],
            new_password=payload.validated_data["new_password"],
        )
        if request.auth is None:  # a session: keep this one signed in
            update_session_auth_hash(request._request, request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(APIView):
    """GET /api/auth/me/: who am I, and in which teams with which role."""

    @extend_schema(responses=MeSerializer)
    def get(self, request: Request) -> Response:
        return Response(me_payload(request.user))


# --- teams --------------------------------------------------------------------------------


class TeamViewSet(
    TeamScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Teams the user belongs to; anyone signed in may create one (and becomes its admin)."""

    queryset = Team.objects.all()
    team_lookup = "id"
    write_role = Role.ADMIN

    def get_serializer_class(self):
        return TeamDetailSerializer if self.action == "retrieve" else TeamSerializer

    def get_queryset(self):
        return teams_for_user(user=self.request.user).order_by("name")

    def get_object_team(self, obj: Team) -> int:
        return obj.pk

    @extend_schema(request=TeamUpdateSerializer, responses=TeamDetailSerializer)
    def partial_update(self, request: Request, pk: int) -> Response:
        """PATCH /api/teams/<pk>/: the settings team admins own."""
        team = self.get_object()  # a foreign team is a 404, a non-admin's write a 403
        payload = TeamUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        team = team_update(team=team, **payload.validated_data)
        return Response(TeamDetailSerializer(team, context={"request": request}).data)

    def perform_create(self, serializer: TeamSerializer) -> None:
        if token_team_id(self.request.user) is not None:
            raise ApiError(status.HTTP_403_FORBIDDEN, "token_team",
                           "This token is bound to one team: it cannot make another. Use an unbound token.")
        serializer.instance = team_create(
            name=serializer.validated_data["name"], creator=self.request.user
        )


class TeamMemberView(TeamScopedMixin, generics.GenericAPIView):
    """POST /api/teams/<pk>/members/: add a member or change a role (team admins only)."""

    queryset = Team.objects.all()
    team_lookup = "id"
    write_role = Role.ADMIN
    serializer_class = MemberAddSerializer

    def get_object_team(self, obj: Team) -> int:
        return obj.pk

    @extend_schema(
        request=MemberAddSerializer, responses={201: MemberSerializer, 200: MemberSerializer}
    )
    def post(self, request: Request, pk: int) -> Response:
        team = self.get_object()
        payload = MemberAddSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        user = User.objects.filter(username=payload.validated_data["username"]).first()
        if user is None:
            raise exceptions.ValidationError({"username": ["No such user."]})
        existed = Membership.objects.filter(team=team, user=user).exists()
        membership = membership_add(
            team=team, user=user, role=payload.validated_data["role"], actor=request.user
        )
        return Response(
            MemberSerializer(membership).data,
            status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED,
        )


class TeamMemberDetailView(TeamScopedMixin, generics.GenericAPIView):
    """DELETE /api/teams/<pk>/members/<user_id>/: remove a member (admins; anyone may leave)."""

    queryset = Team.objects.all()
    team_lookup = "id"
    write_role = Role.ADMIN
    serializer_class = MemberSerializer

    def get_object_team(self, obj: Team) -> int:
        return obj.pk

    def check_object_permissions(self, request: Request, obj: Any) -> None:
        # Leaving a team is always allowed; removing someone else needs admin.
        if request.method == "DELETE" and str(self.kwargs.get("user_id")) == str(request.user.pk):
            if role_in_team(user=request.user, team=obj) is None:
                raise exceptions.NotFound()
            return
        super().check_object_permissions(request, obj)

    @extend_schema(request=MemberRoleSerializer, responses=MemberSerializer)
    def patch(self, request: Request, pk: int, user_id: int) -> Response:
        """Change a member's role (admins); the last admin cannot be demoted (409)."""
        team = self.get_object()
        payload = MemberRoleSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        membership = membership_role_set(
            team=team, user_id=user_id, role=payload.validated_data["role"], actor=request.user
        )
        return Response(MemberSerializer(membership).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, pk: int, user_id: int) -> Response:
        team = self.get_object()
        user = get_object_or_404(User, pk=user_id, memberships__team=team)
        membership_remove(team=team, user=user, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- invitations ----------------------------------------------------------------------------


def accept_url_base(request: Request) -> str:
    """The accept page's address without the secret: the browser app's /invitations/ page."""
    return request.build_absolute_uri("/app/invitations/")


class TeamInvitationsView(TeamScopedMixin, generics.GenericAPIView):
    """GET|POST /api/teams/<pk>/invitations/: the team's pending invitations; invite (admins)."""

    queryset = Team.objects.all()
    team_lookup = "id"
    write_role = Role.ADMIN
    serializer_class = InvitationSerializer
    pagination_class = None

    def get_object_team(self, obj: Team) -> int:
        return obj.pk

    @extend_schema(responses=InvitationSerializer(many=True))
    def get(self, request: Request, pk: int) -> Response:
        team = self.get_object()
        self.require_role(team.pk, Role.ADMIN)
        return Response(InvitationSerializer(invitations_pending(team=team), many=True).data)

    @extend_schema(request=InvitationCreateSerializer, responses={201: NewInvitationSerializer})
    def post(self, request: Request, pk: int) -> Response:
        team = self.get_object()
        payload = InvitationCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        base = accept_url_base(request)
        invitation, raw, mailed = invitation_create(
            team=team,
            invited_by=request.user,
            role=payload.validated_data["role"],
            email=payload.validated_data["email"],
            username=payload.validated_data["username"],
            accept_url_base=base,
        )
        invitation.token, invitation.url = raw, base + raw  # type: ignore[attr-defined]
        invitation.mailed = mailed  # type: ignore[attr-defined]
        return Response(NewInvitationSerializer(invitation).data, status=status.HTTP_201_CREATED)


class TeamInvitationDetailView(TeamScopedMixin, generics.GenericAPIView):
    """DELETE /api/teams/<pk>/invitations/<iid>/: revoke a pending invitation (admins)."""

    queryset = Team.objects.all()
    team_lookup = "id"
    write_role = Role.ADMIN
    serializer_class = InvitationSerializer

    def get_object_team(self, obj: Team) -> int:
        return obj.pk

    @extend_schema(responses={204: None})
    def delete(self, request: Request, pk: int, iid: int) -> Response:
        team = self.get_object()
        invitation = get_object_or_404(Invitation, pk=iid, team=team)
        invitation_revoke(invitation=invitation, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _invitation_or_404(token: str) -> Invitation:
    invitation = invitation_for_secret(raw_token=token)
    if invitation is None:
        raise exceptions.NotFound("No such invitation: check the link.")
    return invitation


class InvitationView(APIView):
    """GET /api/invitations/<token>/: what the accept page shows (public: the link is the secret)."""

    permission_classes = [AllowAny]

    @extend_schema(responses=InvitationPublicSerializer)
    def get(self, request: Request, token: str) -> Response:
        invitation = _invitation_or_404(token)
        state = invitation.state
        return Response(InvitationPublicSerializer({
            "team": {"id": invitation.team_id, "name": invitation.team.name},
            "role": invitation.role,
            "invited_by": invitation.invited_by.get_username() if invitation.invited_by else None,
            "email": invitation.email,
            "username": invitation.username,
            "expires_at": invitation.expires_at,
            "state": state,
            "valid": state == "pending",
            "reason": GONE_REASONS.get(state),
        }).data)


class InvitationAcceptView(APIView):
    """POST /api/invitations/<token>/accept/: join the team, as the signed-in user or a new account.

    With `username` and `password` a new account is made (Django's password validators apply)
    and the browser then signs in as usual; with neither, the signed-in user (session or token)
    joins. Used, revoked or expired: 410 with the reason.
    """

    permission_classes = [AllowAny]

    @extend_schema(request=InvitationAcceptSerializer, responses={201: AcceptedSerializer})
    def post(self, request: Request, token: str) -> Response:
        payload = InvitationAcceptSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        username = payload.validated_data["username"]
        password = payload.validated_data["password"]
        new_account = bool(username or password)
        if not new_account and not request.user.is_authenticated:
            raise ApiError(
                status.HTTP_400_BAD_REQUEST, "invalid",
                "Sign in to accept as yourself, or choose a username and password for a new account.",
                fields={"username": ["Choose a username."], "password": ["Choose a password."]},
            )
        membership = invitation_accept(
            raw_token=token,
            user=None if new_account else request.user,
            username=username,
            password=password,
        )
        return Response(
            {
                "team": {"id": membership.team_id, "name": membership.team.name},
                "role": membership.role,
                "user": {"id": membership.user_id, "username": membership.user.get_username()},
            },
            status=status.HTTP_201_CREATED,
        )
