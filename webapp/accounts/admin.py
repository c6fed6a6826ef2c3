"""Admin pages for teams, memberships, invitations and API tokens."""

from django.contrib import admin

from .models import ApiToken, Invitation, Membership, OidcIdentity, Team


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "max_concurrent_runs", "max_devices_per_run", "production_needs_approval", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "role", "created_at"]
    list_filter = ["role", "team"]
    search_fields = ["user__username", "team__name"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    # The hash is useless to a person and the secret is never stored: show neither.
    list_display = [
        "prefix",
        "user",
        "name",
        "scope",
        "team",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["revoked_at", "scope"]
    search_fields = ["user__username", "name", "prefix"]
    exclude = ["token_hash"]
    # A token's limits are fixed when it is made (a kept lookup would not see a change).
    readonly_fields = ["prefix", "user", "created_at", "last_used_at", "scope", "team"]

    def has_add_permission(self, request):  # tokens are made through the API (plaintext shown once)
        return False


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Invitations as a record: made and changed in the app (the secret is never stored)."""

    list_display = ["team", "email", "username", "role", "invited_by", "created_at", "expires_at",
                    "accepted_at", "revoked_at"]
    list_filter = ["role", "team"]
    search_fields = ["email", "username", "team__name"]
    exclude = ["token_hash"]

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False


@admin.register(OidcIdentity)
class OidcIdentityAdmin(admin.ModelAdmin):
    """Who signed in with SSO as whom; deleting a row lets that provider account match afresh."""

    list_display = ["user", "subject", "issuer", "created_at", "last_sign_in_at"]
    search_fields = ["user__username", "subject"]
    readonly_fields = ["user", "issuer", "subject", "created_at", "last_sign_in_at"]
