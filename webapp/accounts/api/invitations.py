"""Team invitations: a team's pending ones, invite, revoke (admins); the accept page's read and
accept (public: the link is the secret)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import exceptions, generics, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.errors import ApiError
from webapp.api.mixins import TeamScopedMixin
from webapp.api.serializers import StrictSerializer

from ..models import Invitation, Role, Team
from ..selectors import invitation_for_secret, invitations_pending
from ..services.invitations import (
    GONE_REASONS,
    invitation_accept,
    invitation_create,
    invitation_revoke,
)


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
